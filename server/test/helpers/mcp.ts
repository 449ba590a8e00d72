import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** Raw MCP over HTTP, for the tests that check exact bytes, statuses and headers. */
export interface RawAnswer {
  status: number;
  headers: Headers;
  text: string;
  body: any;
}

export const ACCEPT_BOTH = 'application/json, text/event-stream';

export async function rawMcp(
  baseUrl: string,
  opts: {
    key?: string;
    body?: unknown;
    raw?: string;
    session?: string;
    headers?: Record<string, string>;
    method?: string;
  } = {},
): Promise<RawAnswer> {
  const headers: Record<string, string> = {
    accept: ACCEPT_BOTH,
    'content-type': 'application/json',
    ...opts.headers,
  };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (opts.session) headers['mcp-session-id'] = opts.session;
  const method = opts.method ?? 'POST';
  const body = method === 'POST' ? (opts.raw ?? JSON.stringify(opts.body)) : undefined;
  const res = await fetch(new URL('/api/mcp', baseUrl), { method, headers, body });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: parsed };
}

/** Initializes a session with raw HTTP; returns its id (undefined when sessions are off). */
export async function rawSession(baseUrl: string, key: string): Promise<string | undefined> {
  const r = await rawMcp(baseUrl, {
    key,
    body: {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    },
  });
  if (r.status !== 200) throw new Error(`initialize failed: ${r.status} ${r.text}`);
  const id = r.headers.get('mcp-session-id') ?? undefined;
  await rawMcp(baseUrl, { key, session: id, body: { jsonrpc: '2.0', method: 'notifications/initialized' } });
  return id;
}

/** Parses an SSE body into its events. */
export function parseSse(text: string): { id?: string; event?: string; data: string }[] {
  const out: { id?: string; event?: string; data: string }[] = [];
  for (const block of text.split('\n\n')) {
    const ev: { id?: string; event?: string; data: string } = { data: '' };
    let any = false;
    for (const line of block.split('\n')) {
      if (line.startsWith('id: ')) ev.id = line.slice(4);
      else if (line.startsWith('event: ')) ev.event = line.slice(7);
      else if (line.startsWith('data: ')) {
        ev.data += line.slice(6);
        any = true;
      }
    }
    if (any) out.push(ev);
  }
  return out;
}

/** The official SDK client, connected with a bot key. */
export async function sdkClient(
  baseUrl: string,
  key: string,
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'workroom-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL('/api/mcp', baseUrl), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  return { client, transport };
}

/** Runs `fn` with a connected SDK client, then ends its session and closes it, also when `fn` fails. */
export async function withSdkClient(
  baseUrl: string,
  key: string,
  fn: (client: Client, transport: StreamableHTTPClientTransport) => Promise<void>,
): Promise<void> {
  const { client, transport } = await sdkClient(baseUrl, key);
  try {
    await fn(client, transport);
  } finally {
    await transport.terminateSession();
    await client.close();
  }
}

/** The text of a tool result. */
export const textOf = (r: any): string =>
  (r.content as { type: string; text: string }[]).map((c) => c.text).join('\n');

/**
 * The next chunk of an SSE body as text. Fails when the stream ends or sends nothing for `timeoutMs`
 * (a loop reading a closed stream would otherwise spin on resolved reads and starve the test's timer).
 */
export async function sseChunk(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  timeoutMs = 15_000,
): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no SSE data within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const r = await Promise.race([reader.read(), timeout]);
    if (r.done) throw new Error('the SSE stream ended');
    return new TextDecoder().decode(r.value);
  } finally {
    clearTimeout(timer);
  }
}
