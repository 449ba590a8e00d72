import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'vitest';
import type { TestServer } from './server.js';

/**
 * An MCP SDK client whose GET stream (the session's server messages) is open when this resolves: the
 * server has answered the SDK's GET (it registers the stream before its headers go out), so a
 * notification sent from now on reaches the client. Instead of "give the stream a moment to connect".
 */
export async function withStreamingSdkClient(
  baseUrl: string,
  key: string,
  fn: (client: Client, transport: StreamableHTTPClientTransport) => Promise<void>,
): Promise<void> {
  let open!: () => void;
  const streamOpen = new Promise<void>((resolve) => (open = resolve));
  const client = new Client({ name: 'workroom-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL('/api/mcp', baseUrl), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      if ((init?.method ?? 'GET') === 'GET' && res.ok) open();
      return res;
    },
  });
  await client.connect(transport);
  try {
    await streamOpen;
    await fn(client, transport);
  } finally {
    await transport.terminateSession();
    await client.close();
  }
}

/**
 * Counts the resources/list_changed notifications a bot's MCP client gets, against what the server
 * sent it: the server notifies a bot's sessions for each `member.joined` / `member.left` of the bot and
 * each `resources.changed` naming it (transports/mcp/session.ts), in the bus's order. `settled(marker)`
 * is the end of a "nothing more arrives" check: it waits until the bus has carried the sentinel event
 * (`marker` matches it), so every notification the server sent before it is counted in `sent`, then
 * until the client has received exactly that many.
 */
export function listChangedCounter(srv: TestServer, client: Client, botId: string) {
  const state = { sent: 0, received: 0 };
  type Ev = { type: string; data: Record<string, unknown> };
  const seen: Ev[] = [];
  const off = srv.app.services.bus.subscribe((events) => {
    for (const e of events as unknown as Ev[]) {
      seen.push(e);
      const forBot =
        ((e.type === 'member.joined' || e.type === 'member.left') &&
          e.data.member_type === 'bot' &&
          e.data.member_id === botId) ||
        (e.type === 'resources.changed' && (e.data.bot_ids as string[]).includes(botId));
      if (forBot) state.sent++;
    }
  });
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
    state.received++;
  });
  return {
    get received() {
      return state.received;
    },
    /** Waits for the bus event `marker` matches, then for the client to have every notification sent so far. */
    async settled(marker: (e: Ev) => boolean): Promise<number> {
      await expect.poll(() => seen.some(marker), { timeout: 10_000, interval: 5 }).toBe(true);
      const sent = state.sent;
      await expect.poll(() => state.received, { timeout: 10_000, interval: 5 }).toBeGreaterThanOrEqual(sent);
      return state.received;
    },
    stop: off,
  };
}
