import { randomBytes, randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { signDelivery } from '../../../server/src/outbound/sign.js';
import { WebhookReceiver, type Logger, type WebhookReceiverOptions } from '../src/index.js';
import { tamperedRequest, vectorFile, vectorRequest } from './vectors.js';

/**
 * The receiver over real HTTP. Deliveries are signed by the server's own signer
 * (server/src/delivery/sign.ts) or taken from the shared vectors.
 */
const secret = `whsec_${randomBytes(32).toString('base64')}`;

function collectingLogger() {
  const errors: string[] = [];
  const warnings: string[] = [];
  const logger: Logger = { error: (m) => void errors.push(m), warn: (m) => void warnings.push(m) };
  return { errors, warnings, logger };
}

const receivers: WebhookReceiver[] = [];
async function startReceiver(opts: Partial<WebhookReceiverOptions> = {}) {
  const log = collectingLogger();
  const r = new WebhookReceiver({ port: 0, host: '127.0.0.1', secret, logger: log.logger, ...opts });
  await r.start();
  receivers.push(r);
  return { r, url: `http://127.0.0.1:${r.port}/webhook`, ...log };
}

afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(receivers.splice(0).map((r) => r.stop()));
});

function delivery(
  eventType: string,
  data: unknown,
  o: { webhookId?: string; at?: number; secret?: string } = {},
) {
  const at = o.at ?? Math.floor(Date.now() / 1000);
  return signDelivery({
    secret: o.secret ?? secret,
    webhookId: o.webhookId ?? `msg_${randomUUID()}`,
    timestampSeconds: at,
    envelope: {
      event_type: eventType,
      timestamp: new Date(at * 1000).toISOString(),
      bot_id: randomUUID(),
      data,
      event_id: randomUUID(),
    },
  });
}

async function post(url: string, d: { body: string; headers: Record<string, string> }) {
  const res = await fetch(url, { method: 'POST', body: d.body, headers: d.headers });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('WebhookReceiver', () => {
  it('has the spec defaults: port 8000, path /webhook', async () => {
    const r = new WebhookReceiver({ secret });
    try {
      await r.start();
    } catch (err) {
      // Another program holds 8000 (e.g. the Python SDK's tests running beside these): the default
      // was still the one tried.
      expect(String(err)).toMatch(/EADDRINUSE.*8000/);
      return;
    }
    try {
      expect(r.port).toBe(8000);
      const res = await fetch('http://127.0.0.1:8000/elsewhere', { method: 'POST', body: '{}' });
      expect(res.status).toBe(404);
      expect((await fetch('http://127.0.0.1:8000/webhook', { method: 'POST', body: '{}' })).status).toBe(401);
    } finally {
      await r.stop();
    }
    // stop() resolved: the port is closed.
    await expect(fetch('http://127.0.0.1:8000/webhook', { method: 'POST' })).rejects.toThrow();
  });

  it('requires a secret and a command time-out under 5 s', () => {
    expect(() => new WebhookReceiver({ secret: '' })).toThrow(/secret/);
    expect(() => new WebhookReceiver({ secret, commandTimeoutMs: 5000 })).toThrow(/5000/);
  });

  it('accepts every shared vector over HTTP and hands the parsed envelope to its handlers', async () => {
    for (const v of vectorFile.vectors) {
      const { r, url } = await startReceiver({ secret: v.secret });
      const got: unknown[] = [];
      r.on('*', (e) => void got.push(e));
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(v.webhook_timestamp * 1000);
      const res = await post(url, vectorRequest(v));
      vi.useRealTimers();
      expect(res.status, `${v.name}: ${JSON.stringify(res.body)}`).toBe(200);
      await r.idle();
      expect(got, v.name).toEqual([{ ...v.envelope, signature: v.signature }]);
    }
  });

  it('refuses every tampered vector with 401 and runs no handler', async () => {
    for (const t of vectorFile.tampered) {
      const { vector, body, headers } = tamperedRequest(t);
      const { r, url } = await startReceiver({ secret: vector.secret });
      let ran = 0;
      r.on('*', () => void ran++);
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(vector.webhook_timestamp * 1000);
      const res = await post(url, { body, headers });
      vi.useRealTimers();
      expect(res.status, t.name).toBe(401);
      expect(res.body.error).toBe('invalid_signature');
      expect(typeof res.body.message).toBe('string'); // the shape both SDKs answer (README)
      await r.idle();
      expect(ran).toBe(0);
      // The untampered delivery passes the same receiver: the refusal is about the change alone.
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(vector.webhook_timestamp * 1000);
      expect((await post(url, vectorRequest(vector))).status, t.name).toBe(200);
      vi.useRealTimers();
    }
  });

  it('refuses a stale timestamp and a payload changed in flight, and logs why without secrets', async () => {
    const { url, warnings } = await startReceiver();
    const stale = delivery(
      'message.created',
      { content: 'old' },
      { at: Math.floor(Date.now() / 1000) - 3600 },
    );
    expect((await post(url, stale)).status).toBe(401);
    const d = delivery('message.created', { content: 'pay 10' });
    expect((await post(url, { ...d, body: d.body.replace('pay 10', 'pay 99') })).status).toBe(401);
    expect((await post(url, { body: d.body, headers: { 'content-type': 'application/json' } })).status).toBe(
      401,
    );
    expect(warnings).toHaveLength(3);
    expect(warnings.join(' ')).not.toContain(secret.slice(6, 20));
  });

  it('handles a repeated delivery (same webhook-id) once, answering 200 both times', async () => {
    const { r, url } = await startReceiver();
    const seen: string[] = [];
    r.on('message.created', (e) => void seen.push(e.data.content));
    const d = delivery('message.created', { content: 'once' });
    expect((await post(url, d)).status).toBe(200);
    const again = await post(url, d);
    expect(again).toEqual({ status: 200, body: { ok: true, duplicate: true } });
    // A retry of the same event is re-signed with a new timestamp, but keeps its webhook-id.
    const webhookId = d.headers['webhook-id']!;
    await new Promise((res) => setTimeout(res, 1100));
    const resent = delivery('message.created', { content: 'once' }, { webhookId });
    expect((await post(url, resent)).status).toBe(200);
    await r.idle();
    expect(seen).toEqual(['once']);
  });

  it('remembers a bounded number of ids: the oldest is forgotten first', async () => {
    const { r, url } = await startReceiver({ dedupeSize: 2 });
    let n = 0;
    r.on('*', () => void n++);
    const a = delivery('member.joined', {});
    await post(url, a);
    await post(url, delivery('member.joined', {}));
    await post(url, delivery('member.joined', {}));
    await post(url, a); // evicted: handled again
    await r.idle();
    expect(n).toBe(4);
  });

  it('answers 200 before the handlers run; a failing handler is logged, not returned', async () => {
    const { r, url, errors } = await startReceiver();
    let release!: () => void;
    const gate = new Promise<void>((res) => (release = res));
    const order: string[] = [];
    r.on('task.created', async () => {
      order.push('handler started');
      await gate;
      order.push('handler done');
    });
    r.on('task.created', () => {
      throw new Error('boom');
    });
    // The handler is held until after the answer: had the receiver waited for it, post() would hang.
    const res = await post(url, delivery('task.created', { task_id: 'x' }));
    order.push(`answered ${res.status}`);
    await vi.waitFor(() => expect(order).toContain('handler started'));
    expect(order).not.toContain('handler done');
    release();
    await r.idle();
    expect(order.indexOf('answered 200')).toBeLessThan(order.indexOf('handler done'));
    expect(errors).toEqual(['handler for task.created failed']);
  });

  it('answers a command with the handler reply as JSON; times out under 5 s with no reply', async () => {
    const { r, url, errors } = await startReceiver({ commandTimeoutMs: 300 });
    r.command('echo', (cmd) => `You said: ${cmd.args}`);
    r.command('secret', () => ({ content: 'only you see this', ephemeral: true }));
    r.command('slow', () => new Promise((res) => setTimeout(() => res('too late'), 2000)));
    const after: string[] = [];
    r.on('command.invoked', (e) => void after.push(e.data.command));
    const cmd = (command: string, args: string) =>
      delivery('command.invoked', {
        command,
        args,
        text: `/${command} ${args}`,
        invocation_id: randomUUID(),
      });
    const echo = cmd('echo', 'hi there');
    expect(await post(url, echo)).toEqual({ status: 200, body: { content: 'You said: hi there' } });
    // A repeated delivery of the same invocation answers the same reply without running it again.
    expect(await post(url, echo)).toEqual({ status: 200, body: { content: 'You said: hi there' } });
    expect(await post(url, cmd('secret', ''))).toEqual({
      status: 200,
      body: { content: 'only you see this', ephemeral: true },
    });
    const started = Date.now();
    expect(await post(url, cmd('slow', ''))).toEqual({ status: 200, body: { ok: true } });
    expect(Date.now() - started).toBeLessThan(1500);
    expect(await post(url, cmd('unknown', ''))).toEqual({ status: 200, body: { ok: true } });
    await r.idle();
    expect(after).toEqual(['echo', 'secret', 'slow', 'unknown']);
    expect(errors).toEqual(['command /slow took longer than 300 ms; no reply']);
  });

  it('runs one slash-command invocation once even when it arrives under two webhook-ids', async () => {
    const { r, url } = await startReceiver();
    let runs = 0;
    r.command('deploy', () => `deployed #${++runs}`);
    const data = { command: 'deploy', args: '', text: '/deploy', invocation_id: randomUUID() };
    const first = await post(url, delivery('command.invoked', data));
    const second = await post(url, delivery('command.invoked', data)); // another webhook-id
    expect(first).toEqual({ status: 200, body: { content: 'deployed #1' } });
    expect(second).toEqual(first);
    expect(runs).toBe(1);
  });

  it('a sender that hangs up before the answer still gets its event handled, once', async () => {
    const { r, url } = await startReceiver({ commandTimeoutMs: 2000 });
    r.command('slow', () => new Promise((res) => setTimeout(() => res('done'), 400)));
    let handled = 0;
    r.on('command.invoked', () => void handled++);
    const d = delivery('command.invoked', {
      command: 'slow',
      args: '',
      text: '/slow',
      invocation_id: randomUUID(),
    });
    const hungUp = fetch(url, {
      method: 'POST',
      body: d.body,
      headers: d.headers,
      signal: AbortSignal.timeout(100),
    });
    await expect(hungUp).rejects.toThrow();
    await vi.waitFor(() => expect(handled).toBe(1), { timeout: 3000 });
    // The sender's retry gets the reply the command produced, without running anything again.
    expect(await post(url, d)).toEqual({ status: 200, body: { content: 'done' } });
    await r.idle();
    expect(handled).toBe(1);
  });

  it('refuses other methods, other paths and oversized bodies', async () => {
    const { url } = await startReceiver({ maxBodyBytes: 1000 });
    expect((await fetch(url)).status).toBe(405);
    expect((await fetch(url.replace('/webhook', '/other'), { method: 'POST', body: '{}' })).status).toBe(404);
    const big = delivery('message.created', { content: 'x'.repeat(2000) });
    expect((await post(url, big)).status).toBe(413);
  });

  it('relaxed mode (requireAll: false) accepts a body signed only by its signature member', async () => {
    const { r, url } = await startReceiver({ requireAll: false });
    const got: string[] = [];
    r.on('message.created', (e) => void got.push(e.data.content));
    const d = delivery('message.created', { content: 'no headers' });
    const res = await post(url, { body: d.body, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
    // Without webhook-id the event_id deduplicates.
    expect((await post(url, { body: d.body, headers: {} })).body).toEqual({ ok: true, duplicate: true });
    await r.idle();
    expect(got).toEqual(['no headers']);
  });
});
