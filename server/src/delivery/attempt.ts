import type { KeyObject } from 'node:crypto';
import type { Config } from '../config/config.js';
import { decryptSecret } from '../domain/secrets.js';
import type { Clock } from '../runtime/clock.js';
import type { DeliveryTarget } from '../storage/stores/deliveries.js';
import type { Claimed } from './claim.js';
import type { InProcessReceiver } from './in-process.js';
import { SOCKET_LOG, type SocketTransport } from './socket.js';
import { OutboundError, type OutboundClient } from '../outbound/client.js';
import type { Pacer } from './pacer.js';
import { signDelivery, signingKeyObject } from '../outbound/sign.js';
import type { WebhookAttemptOutcome } from '../metrics/hooks.js';

/**
 * The attempt stage of the delivery worker (claim → attempt → record, worker.ts): one claimed delivery
 * in, one `AttemptResult` out. It sends the signed POST (or hands a built-in bot's delivery to its
 * handler in process) and says what happened; it keeps no state about slots or rows, and writes nothing.
 *
 * Built-in bots (`bots.builtin` set) are delivered in process through `inProcess`
 * (delivery/in-process.ts) instead of HTTP: no URL or secret, the same attempts, log and retries, and
 * one delivery at a time per bot, so a built-in bot's handler sees its events one after the other in
 * outbox order (a failed delivery is retried later while the next ones go on).
 */

/** What one attempt came to: the input of the record stage. */
export interface AttemptResult {
  durationMs: number;
  status?: number | null;
  ok?: boolean;
  gone?: boolean;
  /** No retry: the bot cannot receive anything. */
  final?: boolean;
  cancelled?: boolean;
  /** The receiver did not answer within the time-out (its endpoint gets fewer slots). */
  timedOut?: boolean;
  /** Nothing was sent: the bot has nowhere to receive it (no URL, no secret, disabled, not running). */
  notSent?: boolean;
  /** The receiver's Retry-After, on any answer: its endpoint is held that long (record.ts). */
  retryAfter?: string | undefined;
  /** The receiver's `webhook-delivery` header: drop this message, or pause its endpoint (docs/WEBHOOKS.md). */
  receiver?: 'abort-message' | 'disable' | undefined;
  error?: string | undefined;
  snippet?: string | undefined;
  /**
   * Socket attempts (socket.ts): `closed` and `expired` are sent again at once (up to
   * WORKROOM_SOCKET_MAX_ATTEMPTS); `waiting` is no attempt at all (no URL, no socket): the row waits.
   */
  socket?: 'closed' | 'expired' | 'waiting' | 'elsewhere' | undefined;
  /** The transport that carried it (metrics). */
  via?: 'socket' | undefined;
}

export interface AttemptOptions {
  webhooks: Config['webhooks'];
  encryptionKey: Buffer;
  /** During a key rotation, the previous key (secrets under it are still read). */
  previousEncryptionKeys: readonly Buffer[];
  client: OutboundClient;
  inProcess: InProcessReceiver | undefined;
  /** Bots' sockets on this instance (socket.ts); without it, deliveries go by HTTP only. */
  socket: SocketTransport | undefined;
  clock: Clock;
  pacer: Pacer;
  /** Aborted at shutdown: attempts in flight end as `cancelled`. */
  signal: AbortSignal;
}

const SNIPPET_BYTES = 1024;

/** An attempt's result as the metrics count it (docs/METRICS.md, workroom_webhook_attempts_total). */
export function outcomeOf(r: AttemptResult): WebhookAttemptOutcome {
  if (r.cancelled) return 'cancelled';
  if (r.ok) return 'success';
  if (r.notSent) return 'not_sent';
  if (r.gone) return 'gone';
  if (r.timedOut) return 'timeout';
  if (typeof r.status === 'number') return 'http_error';
  return 'network_error';
}

export class Attempter {
  readonly #o: AttemptOptions;
  /** Decrypted signing secrets by their stored (encrypted) form. */
  readonly #secrets = new Map<string, string>();
  /** ed25519 key objects by their stored (encrypted) form. */
  readonly #keys = new Map<string, KeyObject>();

  constructor(opts: AttemptOptions) {
    this.#o = opts;
  }

  /**
   * Sends one claimed delivery (never throws for the receiver's failures: they are in the result);
   * `sent` is called when a socket attempt's frame is written (it then waits for the ack).
   */
  async attempt(c: Claimed, sent?: () => void): Promise<AttemptResult> {
    const { target } = c;
    if (!target || target.deleted_at !== null || target.status !== 'active')
      return { final: true, notSent: true, durationMs: 0, error: 'the bot is disabled or deleted; not sent' };
    if (target.builtin !== null)
      return this.#o.inProcess
        ? this.#deliverInProcess(c, target.builtin)
        : {
            final: true,
            notSent: true,
            durationMs: 0,
            error: 'built-in bots are not running on this server; not sent',
          };
    // A bot's socket is preferred while it is connected; its webhook URL serves otherwise (docs/SOCKET.md).
    if (this.#o.socket?.connected(target.bot_id)) return this.#deliverSocket(c, this.#o.socket, sent);
    // The bot's socket is on another instance (a cluster): that instance's worker sends it.
    if (this.#o.socket?.connectedElsewhere?.(target.bot_id))
      return { notSent: true, socket: 'elsewhere', durationMs: 0, error: SOCKET_LOG.elsewhere };
    if (!target.webhook_url)
      return this.#o.socket
        ? { notSent: true, socket: 'waiting', durationMs: 0, error: SOCKET_LOG.waiting }
        : { final: true, notSent: true, durationMs: 0, error: 'the bot has no webhook URL; not sent' };
    if (!target.secret_encrypted)
      return {
        notSent: true,
        durationMs: 0,
        error: 'the bot has no webhook secret (POST /api/bots/{id}/webhook-secret)',
      };
    return this.#send(c, target, target.webhook_url, target.secret_encrypted);
  }

  async #send(
    c: Claimed,
    target: DeliveryTarget,
    url: string,
    secretEncrypted: string,
  ): Promise<AttemptResult> {
    const { row, data } = c;
    const { signal } = this.#o;
    const t0 = performance.now();
    const signed = signDelivery({
      secret: this.#secret(secretEncrypted),
      signingKey: target.signing_key_encrypted ? this.#signingKey(target.signing_key_encrypted) : undefined,
      webhookId: row.id,
      timestampSeconds: Math.floor(this.#o.clock.now() / 1000),
      envelope: {
        event_type: row.event_type,
        timestamp: row.event_created_at,
        bot_id: target.bot_id,
        data: JSON.parse(data) as unknown,
        event_id: row.event_id,
      },
    });
    const sending = this.#o.client.post(url, signed.body, signed.headers, { signal });
    // What this attempt costs the event loop: building, signing and writing the request (measured),
    // and about as much again for reading the answer.
    this.#o.pacer.charge(2 * (performance.now() - t0));
    try {
      const res = await sending;
      const ok = res.status >= 200 && res.status < 300;
      const control = (res.headers['webhook-delivery'] ?? '').trim().toLowerCase();
      return {
        status: res.status,
        durationMs: res.durationMs,
        snippet: snippet(res.body),
        ok,
        gone: res.status === 410,
        retryAfter: res.headers['retry-after'],
        receiver: control === 'abort-message' || control === 'disable' ? control : undefined,
        error: ok ? undefined : `HTTP ${res.status}`,
      };
    } catch (err) {
      const durationMs = Math.round(performance.now() - t0);
      if (signal.aborted) return { durationMs, cancelled: true };
      const error = err instanceof OutboundError ? `${err.kind}: ${err.message}` : `error: ${String(err)}`;
      return { durationMs, error, timedOut: err instanceof OutboundError && err.kind === 'timeout' };
    }
  }

  /** A built-in bot's delivery: its handler in this process, within the same time-out as HTTP. */
  async #deliverInProcess(c: Claimed, builtin: string): Promise<AttemptResult> {
    const { row, data } = c;
    const { signal, webhooks } = this.#o;
    const t0 = performance.now();
    const ms = () => Math.round(performance.now() - t0);
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const cut = new Promise<'timeout' | 'cancelled'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), webhooks.timeoutMs);
      onAbort = () => resolve('cancelled');
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const handled = this.#o.inProcess!.deliver(builtin, {
        event_type: row.event_type,
        event_id: row.event_id,
        timestamp: row.event_created_at,
        bot_id: row.bot_id,
        data: JSON.parse(data) as unknown,
        delivery_id: row.id,
      });
      const r = await Promise.race([handled, cut]);
      if (r === 'cancelled') return { durationMs: ms(), cancelled: true };
      if (r === 'timeout') {
        handled.catch(() => undefined); // it may still end; its outcome no longer counts
        return {
          durationMs: ms(),
          error: `timeout: the built-in bot did not finish within ${webhooks.timeoutMs} ms`,
        };
      }
      const detail = r.detail === undefined ? undefined : snippet(r.detail);
      return r.ok
        ? { ok: true, durationMs: ms(), status: null, snippet: detail ?? 'ok (in process)' }
        : { durationMs: ms(), status: null, error: `in process: ${detail ?? 'failed'}`, snippet: detail };
    } catch (err) {
      return {
        durationMs: ms(),
        status: null,
        error: `in process: ${err instanceof Error ? err.message : String(err)}`,
      };
    } finally {
      clearTimeout(timer);
      if (onAbort) signal.removeEventListener('abort', onAbort);
    }
  }

  /** Over one of the bot's sockets: the attempt lasts until the ack, the socket's close or the lease's end. */
  async #deliverSocket(c: Claimed, socket: SocketTransport, sent?: () => void): Promise<AttemptResult> {
    const { row, data } = c;
    const t0 = performance.now();
    const ms = () => Math.round(performance.now() - t0);
    const r = await socket.deliver(
      {
        event_type: row.event_type,
        event_id: row.event_id,
        timestamp: row.event_created_at,
        bot_id: row.bot_id,
        data: JSON.parse(data) as unknown,
        delivery_id: row.id,
        attempt: row.attempts + 1,
      },
      this.#o.signal,
      sent,
    );
    const via = 'socket' as const;
    switch (r.kind) {
      case 'acked':
        return { ok: true, durationMs: ms(), status: null, snippet: SOCKET_LOG.acked, via };
      case 'nacked':
        return { durationMs: ms(), status: null, error: SOCKET_LOG.nacked(r.reason), via };
      case 'closed':
        return { durationMs: ms(), status: null, error: SOCKET_LOG.closed, socket: 'closed', via };
      case 'expired':
        return {
          durationMs: ms(),
          status: null,
          error: SOCKET_LOG.expired(r.leaseMs),
          socket: 'expired',
          timedOut: true,
          via,
        };
      case 'cancelled':
        return { durationMs: ms(), cancelled: true, via };
    }
  }

  #signingKey(encrypted: string): KeyObject {
    let k = this.#keys.get(encrypted);
    if (k === undefined) {
      if (this.#keys.size >= 1000) this.#keys.clear();
      k = signingKeyObject(this.#secret(encrypted));
      this.#keys.set(encrypted, k);
    }
    return k;
  }

  #secret(encrypted: string): string {
    let s = this.#secrets.get(encrypted);
    if (s === undefined) {
      if (this.#secrets.size >= 1000) this.#secrets.clear();
      s = decryptSecret(encrypted, this.#o.encryptionKey, this.#o.previousEncryptionKeys);
      this.#secrets.set(encrypted, s);
    }
    return s;
  }
}

function snippet(body: string): string {
  const b = Buffer.from(body, 'utf8');
  return b.length <= SNIPPET_BYTES ? body : b.subarray(0, SNIPPET_BYTES).toString('utf8');
}
