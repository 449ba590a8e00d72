// The reference every benchmark compares against, measured in the same run: bare node:http, JSON parse,
// one better-sqlite3 insert (WAL, synchronous=NORMAL, like Workroom), JSON answer.
// MODE=rest answers {id}; MODE=jsonrpc answers a JSON-RPC result, as a minimal MCP server would.
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

const mode = process.env.MODE ?? 'rest';
const db = new Database(join(mkdtempSync(join(tmpdir(), 'wr-ref-')), 'ref.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec(
  'create table messages (id text primary key, channel_id text not null, content text not null, created_at text not null)',
);
const insert = db.prepare('insert into messages (id, channel_id, content, created_at) values (?, ?, ?, ?)');

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
    const content = mode === 'rest' ? body.content : body.params?.arguments?.content;
    insert.run(id, 'c', String(content ?? ''), new Date().toISOString());
    const out =
      mode === 'rest'
        ? JSON.stringify({ id })
        : JSON.stringify({
            jsonrpc: '2.0',
            id: body.id,
            result: { content: [{ type: 'text', text: `Message sent (id: ${id})` }] },
          });
    res.writeHead(mode === 'rest' ? 201 : 200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(out),
    });
    res.end(out);
  });
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`READY ${server.address().port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
