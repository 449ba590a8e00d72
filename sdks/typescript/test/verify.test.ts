import { describe, expect, it } from 'vitest';
import { verifySignature } from '../src/index.js';
import { tamperedRequest, vectorFile, vectorRequest } from './vectors.js';

/** verifySignature against every shared vector (sdks/test-vectors.json) and every tampered variant. */
describe('verifySignature and the shared test vectors', () => {
  it('the file is format 1 with vectors and tampered entries', () => {
    expect(vectorFile.format).toBe(1);
    expect(vectorFile.vectors.length).toBeGreaterThanOrEqual(6);
    expect(vectorFile.tampered.length).toBeGreaterThanOrEqual(13);
  });

  for (const v of vectorFile.vectors) {
    it(`accepts ${v.name} under the default rule, with all three signatures verified`, () => {
      const { body, headers } = vectorRequest(v);
      const r = verifySignature(Buffer.from(body, 'utf8'), headers, v.secret, { now: v.webhook_timestamp });
      expect(r).toEqual({
        ok: true,
        webhookId: v.webhook_id,
        timestamp: v.webhook_timestamp,
        verified: ['standard-webhooks', 'x-workroom-signature', 'body'],
      });
      // The body is U plus the signature member, as the vector says.
      expect(body).toBe(`${v.unsigned_body.slice(0, -1)},"signature":"${v.signature}"}`);
    });

    it(`accepts ${v.name} with each signature on its own (requireAll: false)`, () => {
      const { body, headers } = vectorRequest(v);
      const only = (keep: string[]) =>
        Object.fromEntries(Object.entries(headers).filter(([k]) => keep.includes(k) || k === 'content-type'));
      const opts = { now: v.webhook_timestamp, requireAll: false };
      // The body signature cannot be taken out without changing the bytes the headers sign, so each
      // header signature is checked with the other header gone, and the body signature with none.
      const sw = verifySignature(
        body,
        only(['webhook-id', 'webhook-timestamp', 'webhook-signature']),
        v.secret,
        opts,
      );
      expect(sw.ok && sw.verified.includes('standard-webhooks')).toBe(true);
      const xw = verifySignature(body, only(['x-workroom-signature']), v.secret, opts);
      expect(xw.ok && xw.verified.includes('x-workroom-signature')).toBe(true);
      const bodyOnly = verifySignature(body, only([]), v.secret, opts);
      expect(bodyOnly).toMatchObject({ ok: true, verified: ['body'] });
      // ...and the default rule refuses the last two: no Standard Webhooks signature.
      expect(verifySignature(body, only([]), v.secret, { now: v.webhook_timestamp }).ok).toBe(false);
    });
  }

  for (const t of vectorFile.tampered) {
    it(`refuses tampered ${t.name} (${t.why})`, () => {
      const { vector, body, headers } = tamperedRequest(t);
      const r = verifySignature(Buffer.from(body, 'utf8'), headers, vector.secret, {
        now: vector.webhook_timestamp,
      });
      expect(r.ok).toBe(false);
      expect(r.ok === false && r.reason).toMatch(/\w/);
    });
  }

  it('honours the tolerance window at its edge', () => {
    const v = vectorFile.vectors[0]!;
    const { body, headers } = vectorRequest(v);
    const at = (now: number, toleranceSeconds?: number) =>
      verifySignature(body, headers, v.secret, { now, ...(toleranceSeconds ? { toleranceSeconds } : {}) }).ok;
    expect(at(v.webhook_timestamp + 300)).toBe(true);
    expect(at(v.webhook_timestamp + 301)).toBe(false);
    expect(at(v.webhook_timestamp - 301)).toBe(false);
    expect(at(v.webhook_timestamp + 3600, 3600)).toBe(true);
  });

  it('refuses with the wrong secret, an empty secret, and for a non-Workroom body', () => {
    const v = vectorFile.vectors[0]!;
    const { body, headers } = vectorRequest(v);
    const other = vectorFile.vectors.find((x) => x.secret !== v.secret)!.secret;
    expect(verifySignature(body, headers, other, { now: v.webhook_timestamp }).ok).toBe(false);
    expect(verifySignature(body, headers, '', { now: v.webhook_timestamp }).ok).toBe(false);
    expect(verifySignature('not json', {}, v.secret, { requireAll: false }).ok).toBe(false);
  });

  it('takes Node headers, fetch Headers, Buffers, Uint8Arrays and strings alike', () => {
    const v = vectorFile.vectors[1]!;
    const { body, headers } = vectorRequest(v);
    const opts = { now: v.webhook_timestamp };
    expect(verifySignature(new TextEncoder().encode(body), new Headers(headers), v.secret, opts).ok).toBe(
      true,
    );
    const upper = Object.fromEntries(Object.entries(headers).map(([k, x]) => [k.toUpperCase(), x]));
    expect(verifySignature(body, upper, v.secret, opts).ok).toBe(true);
  });
});
