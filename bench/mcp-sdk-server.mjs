// The official MCP SDK's stateful server (McpServer + StreamableHTTPServerTransport, one transport per
// session; SSE responses as by default, or JSON responses with SDK_JSON=1) with the same two tools as the bench: send_message does one better-sqlite3
// insert (WAL, synchronous=NORMAL), read_messages selects the 20 newest. For bench/mcp.ts.
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const db = new Database(join(mkdtempSync(join(tmpdir(), 'wr-sdk-')), 'sdk.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec(
  'create table messages (id text primary key, channel_id text not null, content text not null, created_at text not null)',
);
db.exec('create index messages_channel on messages (channel_id, created_at)');
const insert = db.prepare('insert into messages (id, channel_id, content, created_at) values (?, ?, ?, ?)');
const recent = db.prepare('select * from messages where channel_id = ? order by created_at desc limit ?');

function buildServer() {
  const server = new McpServer({ name: 'sdk-bench', version: '1.0.0' });
  server.registerTool(
    'send_message',
    { description: 'Send a message', inputSchema: { channel_id: z.string(), content: z.string() } },
    async ({ channel_id, content }) => {
      const id = randomUUID();
      insert.run(id, channel_id, content, new Date().toISOString());
      return { content: [{ type: 'text', text: `Message sent.\nmessage_id: ${id}` }] };
    },
  );
  server.registerTool(
    'read_messages',
    { description: 'Read messages', inputSchema: { channel_id: z.string(), limit: z.number().optional() } },
    async ({ channel_id, limit }) => {
      const rows = recent.all(channel_id, limit ?? 20);
      return {
        content: [
          { type: 'text', text: rows.map((r) => `- message_id: ${r.id}\n  ${r.content}`).join('\n') },
        ],
      };
    },
  );
  return server;
}

const transports = new Map();
const http = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const sid = req.headers['mcp-session-id'];
    let transport = sid ? transports.get(sid) : undefined;
    if (!transport) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: process.env.SDK_JSON === '1',
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      await buildServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  });
});
http.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`READY ${http.address().port}\n`);
});
process.on('SIGTERM', () => http.close(() => process.exit(0)));
