import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { signDelivery, type WebhookEnvelope } from '../src/outbound/sign.js';
import { parseRetryAfterMs, retryDelayMs, MAX_RETRY_AFTER_MS } from '../src/delivery/schedule.js';

/**
 * The signer against the shared vectors (sdks/test-vectors.json, made independently by
 * sdks/make-test-vectors.py) and against the standardwebhooks package; the retry schedule's bounds.
 */
interface Vector {
  name: string;
  secret: string;
  webhook_id: string;
  webhook_timestamp: number;
  envelope: WebhookEnvelope;
  unsigned_body: string;
  body: string;
  signature: string;
  x_workroom_signature: string;
  webhook_signature: string;
}
const vectors = JSON.parse(
  readFileSync(new URL('../../sdks/test-vectors.json', import.meta.url), 'utf8'),
) as {
  format: number;
  vectors: Vector[];
  tampered: { name: string; vector: string; body: string }[];
};

const sign = (v: Vector) =>
  signDelivery({
    secret: v.secret,
    webhookId: v.webhook_id,
    timestampSeconds: Number(v.webhook_timestamp),
    envelope: v.envelope,
  });

describe('signDelivery', () => {
  it('reads vector format 1 with vectors and tampered variants', () => {
    expect(vectors.format).toBe(1);
    expect(vectors.vectors.length).toBeGreaterThan(0);
    expect(vectors.tampered.length).toBeGreaterThan(0);
  });

  it.each(vectors.vectors.map((v) => [v.name, v] as const))('reproduces vector %s exactly', (_name, v) => {
    const s = sign(v);
    expect(s.body).toBe(v.body);
    expect(s.body.startsWith(v.unsigned_body.slice(0, -1))).toBe(true);
    expect(JSON.parse(s.body).signature).toBe(v.signature);
    expect(s.headers['x-workroom-signature']).toBe(v.x_workroom_signature);
    expect(s.headers['webhook-signature']).toBe(v.webhook_signature);
    expect(s.headers['webhook-id']).toBe(v.webhook_id);
    expect(s.headers['webhook-timestamp']).toBe(String(v.webhook_timestamp));
    expect(s.headers['content-type']).toBe('application/json');
    expect(s.headers['user-agent']).toMatch(/^Workroom/);
  });

  it('signs U, the body without its signature member, which a receiver gets back by re-serializing', () => {
    for (const v of vectors.vectors) {
      const { signature, ...rest } = JSON.parse(sign(v).body) as Record<string, unknown>;
      const u = JSON.stringify(rest);
      expect(u).toBe(v.unsigned_body);
      expect(signature).toBe(`sha256=${createHmac('sha256', v.secret).update(u).digest('hex')}`);
    }
  });

  it('is verified by the standardwebhooks package, which refuses every tampered body', () => {
    const byName = new Map(vectors.vectors.map((v) => [v.name, v]));
    // Fresh timestamps: the package refuses ones older than five minutes.
    const now = Math.floor(Date.now() / 1000);
    for (const v of vectors.vectors) {
      const s = signDelivery({
        secret: v.secret,
        webhookId: v.webhook_id,
        timestampSeconds: now,
        envelope: v.envelope,
      });
      expect(new Webhook(v.secret).verify(s.body, s.headers)).toEqual(JSON.parse(s.body));
    }
    for (const t of vectors.tampered) {
      const v = byName.get(t.vector)!;
      const s = signDelivery({
        secret: v.secret,
        webhookId: v.webhook_id,
        timestampSeconds: now,
        envelope: v.envelope,
      });
      expect(() => new Webhook(v.secret).verify(t.body, s.headers), t.name).toThrow();
    }
  });

  it('puts the envelope members in the fixed order whatever order they were built in', () => {
    const v = vectors.vectors[0]!;
    const e = v.envelope;
    const shuffled = {
      data: e.data,
      event_id: e.event_id,
      bot_id: e.bot_id,
      timestamp: e.timestamp,
      event_type: e.event_type,
    };
    expect(
      signDelivery({
        secret: v.secret,
        webhookId: v.webhook_id,
        timestampSeconds: Number(v.webhook_timestamp),
        envelope: shuffled,
      }).body,
    ).toBe(v.body);
  });
});

describe('retryDelayMs', () => {
  const delays = [60_000, 300_000];

  it('waits each configured delay within ±10 % and gives up after the last', () => {
    for (const r of [0, 0.5, 0.999999]) {
      const first = retryDelayMs(1, delays, undefined, () => r)!;
      const second = retryDelayMs(2, delays, undefined, () => r)!;
      expect(first).toBeGreaterThanOrEqual(54_000);
      expect(first).toBeLessThanOrEqual(66_000);
      expect(second).toBeGreaterThanOrEqual(270_000);
      expect(second).toBeLessThanOrEqual(330_000);
    }
    expect(retryDelayMs(1, delays, undefined, () => 0)).toBe(54_000);
    expect(retryDelayMs(3, delays)).toBeNull();
    expect(retryDelayMs(1, [])).toBeNull();
    expect(() => retryDelayMs(0, delays)).toThrow(RangeError);
  });

  it('honours Retry-After (seconds or HTTP date) between the scheduled delay and one hour', () => {
    const now = Date.parse('2026-11-23T10:00:00Z');
    const mid = () => 0.5;
    expect(retryDelayMs(1, delays, '120', mid, now)).toBe(120_000);
    expect(retryDelayMs(1, delays, '5', mid, now)).toBe(60_000); // never sooner than our schedule
    expect(retryDelayMs(1, delays, '86400', mid, now)).toBe(MAX_RETRY_AFTER_MS); // never later than 1 h
    expect(retryDelayMs(1, delays, 'Mon, 23 Nov 2026 10:10:00 GMT', mid, now)).toBe(600_000);
    expect(retryDelayMs(1, delays, 'soon', mid, now)).toBe(60_000);
    expect(retryDelayMs(2, delays, '600', mid, now)).toBe(600_000);
    expect(retryDelayMs(3, delays, '1', mid, now)).toBeNull(); // Retry-After does not add attempts
  });

  it('parses only the two Retry-After forms', () => {
    const now = Date.parse('2026-11-23T10:00:00Z');
    expect(parseRetryAfterMs('0', now)).toBe(0);
    expect(parseRetryAfterMs(' 30 ', now)).toBe(30_000);
    expect(parseRetryAfterMs('Mon, 23 Nov 2026 09:00:00 GMT', now)).toBe(0);
    for (const bad of ['-1', '1.5', '', 'tomorrow', '2026-11-23T10:10:00Z'])
      expect(parseRetryAfterMs(bad, now)).toBeNull();
  });
});
