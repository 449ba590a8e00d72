// The PostgreSQL reference (issue 18), measured in the same run as Workroom on the same database: bare
// node:http, JSON parse, one prepared insert on a pg pool of 10 connections, JSON answer. The table
// lives in a schema of its own (REF_SCHEMA), which the bench drops afterwards.
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import pg from 'pg';

const schema = process.env.REF_SCHEMA ?? 'wr_ref';
const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL,
  max: 10,
  options: `-c search_path=${schema}`,
});
const setup = await pool.connect();
await setup.query(`create schema if not exists "${schema}"`);
await setup.query(
  `create table if not exists "${schema}".messages (id text primary key, channel_id text not null, content text not null, created_at text not null)`,
);
setup.release();
const insert = 'insert into messages (id, channel_id, content, created_at) values ($1, $2, $3, $4)';

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      res.writeHead(400).end();
      return;
    }
    const id = randomUUID();
    pool
      .query({
        name: 'ref_insert',
        text: insert,
        values: [id, 'c', String(body.content ?? ''), new Date().toISOString()],
      })
      .then(() => {
        const out = JSON.stringify({ id });
        res.writeHead(201, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
        res.end(out);
      })
      .catch(() => res.writeHead(500).end());
  });
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`READY ${server.address().port}\n`);
});
process.on('SIGTERM', () => server.close(() => pool.end().then(() => process.exit(0))));
