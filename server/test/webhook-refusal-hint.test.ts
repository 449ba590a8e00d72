import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboundClient, OutboundError } from '../src/outbound/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World } from './helpers/world.js';

/**
 * Issue 20, point 5: a refused webhook address says which setting opens it (with the address's own range
 * as the example) and where the settings are documented, at registration and at delivery.
 */
describe('the SSRF refusal names the setting that allows the address', () => {
  let srv: TestServer;
  let w: World;
  let receiver: Server;
  let port: number;

  beforeAll(async () => {
    srv = await startTestServer();
    w = await World.create(srv.url);
    receiver = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    port = (receiver.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((r) => receiver.close(r));
    await srv?.close();
  });

  it('at registration: 400 naming webhook_url, WORKROOM_WEBHOOK_ALLOWED_RANGES with the range, and the docs', async () => {
    for (const [url, cidr] of [
      [`http://127.0.0.1:${port}/hook`, '127.0.0.1/32'],
      ['http://[::1]/hook', '::1/128'],
      ['http://10.1.2.3/hook', '10.1.2.3/32'],
    ] as const) {
      const res = await w.admin.api.post('/api/bots', { name: 'local-bot', webhook_url: url });
      expect(res.status, url).toBe(400);
      expect(res.body.error.field).toBe('webhook_url');
      const message: string = res.body.error.message;
      expect(message, url).toContain(`WORKROOM_WEBHOOK_ALLOWED_RANGES=${cidr}`);
      expect(message).toContain('WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS=true');
      expect(message).toContain('docs/WEBHOOKS.md#outgoing-calls-the-rules');
    }
    const res = await w.admin.api.post('/api/bots', { name: 'local-bot', webhook_url: 'http://localhost/x' });
    expect(res.body.error.message).toContain('WORKROOM_WEBHOOK_ALLOWED_RANGES=127.0.0.1/32');
  });

  it('at delivery: the blocked_address error names the setting; with the range allowed it is sent', async () => {
    const strict = new OutboundClient({ timeoutMs: 2000, allowPrivate: false, allowedRanges: [] });
    const err = await strict.post(`http://127.0.0.1:${port}/hook`, '{}', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutboundError);
    expect((err as OutboundError).kind).toBe('blocked_address');
    expect((err as OutboundError).message).toContain('WORKROOM_WEBHOOK_ALLOWED_RANGES=127.0.0.1/32');
    // A name that resolves to the loopback address: the refusal names the address it resolved to.
    const named = await strict.post(`http://localhost:${port}/hook`, '{}', {}).catch((e: unknown) => e);
    expect((named as OutboundError).message).toMatch(
      /WORKROOM_WEBHOOK_ALLOWED_RANGES=(127\.0\.0\.1\/32|::1\/128)/,
    );
    // Following the hint works.
    const opened = new OutboundClient({
      timeoutMs: 2000,
      allowPrivate: false,
      allowedRanges: ['127.0.0.1/32'],
    });
    expect((await opened.post(`http://127.0.0.1:${port}/hook`, '{}', {})).status).toBe(200);
  });
});
