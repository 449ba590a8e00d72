import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { IncomingHttpHeaders } from 'node:http';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector, type Dispatcher } from 'undici';

/**
 * The one HTTP client through which Workroom calls out (webhook deliveries, commands, tests).
 * It exists so that a bot's webhook URL cannot turn the server into a proxy into its own network (SSRF):
 *  - http and https only; redirects are never followed (a 3xx is just the answer's status);
 *  - every address is judged by AddressPolicy: by default only public unicast addresses pass;
 *  - the judgement is made on the addresses actually connected to: a `lookup` on the connection checks
 *    every address DNS returns, literal IP hosts (which Node never passes through lookup) are checked
 *    before the request, and the socket's remoteAddress is checked again on connect. A name that
 *    resolved to a public address at registration and to 127.0.0.1 at delivery (DNS rebinding) fails;
 *  - one deadline covers DNS, connect, TLS, headers and body; the answer's body is read up to a cap.
 * The HTTP/1.1 client underneath is undici's (keep-alive pools per origin), driven through its
 * `dispatch` handler API: the policy sits in its connector, and a delivery costs about half the CPU of
 * a `node:http` request (bench/outbound-client.ts).
 */

export type OutboundErrorKind =
  'invalid_url' | 'blocked_address' | 'dns' | 'connect' | 'timeout' | 'tls' | 'response';

export class OutboundError extends Error {
  constructor(
    readonly kind: OutboundErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'OutboundError';
  }
}

export interface OutboundResponse {
  status: number;
  headers: Record<string, string>;
  /** The first maxResponseBytes of the answer's body (UTF-8; a cut character shows as U+FFFD). */
  body: string;
  durationMs: number;
}

export interface AddressPolicyOptions {
  /** WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS: every address passes. */
  allowPrivate: boolean;
  /** WORKROOM_WEBHOOK_ALLOWED_RANGES: CIDRs (e.g. 10.20.0.0/16, fd00::/8) that pass although not public. */
  allowedRanges: string[];
}

type Address = ipaddr.IPv4 | ipaddr.IPv6;

const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

/** ipaddr.js range names as a person would say them (the rest read well as they are). */
const RANGE_NAMES: Record<string, string> = {
  linkLocal: 'link-local',
  carrierGradeNat: 'carrier-grade NAT',
  uniqueLocal: 'unique-local',
  private: 'private-network',
};

/** The IPv4 address an IPv6 form carries (mapped, translated, NAT64, 6to4), which is where it really goes. */
function embeddedIPv4(a: ipaddr.IPv6): ipaddr.IPv4 | null {
  const p = a.parts;
  const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  switch (a.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
      return v4(p[6]!, p[7]!);
    case 'rfc6052':
      // 64:ff9b::/96 carries the address in its last 32 bits; the local-use 64:ff9b:1::/48 is refused whole.
      return p[2] === 0 ? v4(p[6]!, p[7]!) : null;
    case '6to4':
      return v4(p[1]!, p[2]!);
    default:
      return null;
  }
}

export class AddressPolicy {
  readonly allowPrivate: boolean;
  readonly #ranges: [Address, number][];

  constructor(opts: AddressPolicyOptions) {
    this.allowPrivate = opts.allowPrivate;
    this.#ranges = opts.allowedRanges.map((cidr) => {
      if (!ipaddr.isValidCIDR(cidr)) throw new Error(`"${cidr}" is not a CIDR range such as 10.0.0.0/8`);
      return ipaddr.parseCIDR(cidr);
    });
  }

  /** Why a connection to `address` (an IP literal) is refused, or null when it may be made. */
  refusal(address: string): string | null {
    if (this.allowPrivate) return null;
    const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
    if (!ipaddr.isValid(bare)) return `${address} is not an IP address`;
    const parsed = ipaddr.parse(bare);
    const inner = parsed.kind() === 'ipv6' ? embeddedIPv4(parsed as ipaddr.IPv6) : null;
    const forms = inner ? [parsed, inner] : [parsed];
    if (
      forms.some((f) => this.#ranges.some(([net, bits]) => f.kind() === net.kind() && f.match(net, bits)))
    ) {
      return null;
    }
    const judged = inner ?? parsed;
    const range = judged.range();
    if (range !== 'unicast')
      return `${address} is a ${RANGE_NAMES[range] ?? range} address, not a public one`;
    // ::a.b.c.d (IPv4-compatible, deprecated) is "unicast" to ipaddr.js but never a public destination.
    if (judged.kind() === 'ipv6' && (judged as ipaddr.IPv6).match(IPV4_COMPATIBLE)) {
      return `${address} is an IPv4-compatible IPv6 address, not a public one`;
    }
    return null;
  }
}

/** Where the settings that open private addresses are documented (named in every refusal). */
export const ADDRESS_SETTINGS_DOC = 'docs/WEBHOOKS.md#outgoing-calls-the-rules';

/**
 * What a refusal adds so that whoever reads it knows how to allow the address: the setting that opens a
 * range, with the address's own range as the example, and where the settings are documented.
 */
export function refusalHint(address: string): string {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const cidr = isIP(bare) === 6 ? `${bare}/128` : isIP(bare) === 4 ? `${bare}/32` : '<CIDR>';
  return (
    ` (to allow it, set WORKROOM_WEBHOOK_ALLOWED_RANGES=${cidr}, or WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS=true ` +
    `for development; see ${ADDRESS_SETTINGS_DOC})`
  );
}

interface ParsedTarget {
  url: URL;
  /** The hostname without IPv6 brackets. */
  host: string;
}

function parseTarget(url: string): ParsedTarget | string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'is not a valid URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'must be an http:// or https:// URL';
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (!host) return 'has no host';
  return { url: u, host };
}

const isLocalhostName = (host: string): boolean => /(^|\.)localhost\.?$/i.test(host);

/**
 * The check at registration: scheme, literal IP hosts (the WHATWG parser has already turned 2130706433,
 * 0x7f.1 and 0177.0.0.1 into 127.0.0.1) and localhost names. A name that resolves to a private address
 * passes here and is refused at delivery, where the address actually connected to is known.
 * Returns what is wrong (a phrase to follow the field's name), or null.
 */
export function checkWebhookUrl(url: string, opts: AddressPolicyOptions): string | null {
  const target = parseTarget(url);
  if (typeof target === 'string') return target;
  const policy = new AddressPolicy(opts);
  if (isIP(target.host)) {
    const why = policy.refusal(target.host);
    return why && `must not point to a private address: ${why}${refusalHint(target.host)}`;
  }
  if (isLocalhostName(target.host)) {
    const why = policy.refusal('127.0.0.1') && policy.refusal('::1');
    return (
      why &&
      `must not point to a private address: ${target.host} is the server itself${refusalHint('127.0.0.1')}`
    );
  }
  return null;
}

const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NODATA', 'EAI_NONAME', 'ENODATA']);
const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|ERR_OSSL_)/;

function classify(err: unknown, answered: boolean): OutboundError {
  if (err instanceof OutboundError) return err;
  const e = err as NodeJS.ErrnoException;
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = e instanceof Error ? e.message : String(err);
  // undici's own codes say less than its messages ("other side closed").
  const what = code && !code.startsWith('UND_ERR_') ? code : message;
  if (code === 'UND_ERR_INVALID_ARG')
    return new OutboundError('invalid_url', `The request could not be built: ${message}`);
  if (answered) return new OutboundError('response', `the answer broke off: ${what}`);
  if (DNS_CODES.has(code)) return new OutboundError('dns', `the host name did not resolve: ${what}`);
  if (TLS_CODE.test(code)) return new OutboundError('tls', `TLS failed: ${what}`);
  return new OutboundError('connect', `could not connect: ${what}`);
}

export interface OutboundClientOptions extends AddressPolicyOptions {
  timeoutMs: number;
  /** How much of an answer's body is kept (default 2048 bytes); the rest is not read. */
  maxResponseBytes?: number;
  /** Name resolution, dns.lookup by default; tests inject a resolver with their own answers. */
  lookup?: Resolver;
}

/** dns.lookup with `all: true`: every address of a name. */
export type Resolver = (
  hostname: string,
  options: { family?: number; hints?: number; all: true },
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/** Where a call goes, as undici takes it. */
interface Target {
  origin: string;
  path: string;
  /** From credentials in the URL (`https://user:pass@host/`): HTTP Basic. */
  authorization: string | undefined;
}

/** URLs whose judgement an OutboundClient keeps (more: it starts again). */
const TARGETS_KEPT = 1000;

function judgeTarget(url: string, policy: AddressPolicy): Target | OutboundError {
  const target = parseTarget(url);
  if (typeof target === 'string') return new OutboundError('invalid_url', `The URL ${target}`);
  if (isIP(target.host)) {
    const why = policy.refusal(target.host);
    if (why) return new OutboundError('blocked_address', `${why}${refusalHint(target.host)}`);
  }
  const u = target.url;
  return {
    origin: u.origin,
    path: `${u.pathname}${u.search}`,
    authorization: u.username
      ? `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`
      : undefined,
  };
}

export class OutboundClient {
  readonly #policy: AddressPolicy;
  readonly #timeoutMs: number;
  readonly #maxResponseBytes: number;
  readonly #resolve: Resolver;
  /**
   * Keep-alive pools per origin. A socket is judged once, when it connects (#connect), and then reused
   * for the same origin. Its own time-outs are off: the deadline of each call (#send) covers them all.
   */
  readonly #agent: Agent;
  readonly #targets = new Map<string, Target | OutboundError>();
  /**
   * The calls under way by abort signal, each signal listened to once: the delivery worker passes its
   * one shutdown signal to every call, and an `abort` listener added and removed per call (an
   * EventTarget's list, 64 calls long) cost ~1 % of a delivery's profile (measured 2026-11-28).
   */
  readonly #underWay = new WeakMap<AbortSignal, Set<() => void>>();

  constructor(opts: OutboundClientOptions) {
    this.#policy = new AddressPolicy(opts);
    this.#timeoutMs = opts.timeoutMs;
    this.#maxResponseBytes = opts.maxResponseBytes ?? 2048;
    this.#resolve = opts.lookup ?? dnsLookup;
    const connect = buildConnector({ lookup: this.#lookup, timeout: opts.timeoutMs });
    this.#agent = new Agent({
      connect: (options, callback) =>
        connect(options, (err, socket) => {
          if (err || !socket) return callback(err ?? new Error('no socket'), null);
          const why = this.#policy.refusal(socket.remoteAddress ?? 'unknown');
          if (!why) return callback(null, socket);
          socket.destroy();
          callback(
            new OutboundError(
              'blocked_address',
              `connected to a refused address: ${why}${refusalHint(socket.remoteAddress ?? '')}`,
            ),
            null,
          );
        }),
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  }

  /** Resolves every address of the name and refuses the name if any of them is refused. */
  readonly #lookup: LookupFunction = (hostname, options, callback) => {
    this.#resolve(
      hostname,
      { family: familyNumber(options.family), hints: options.hints, all: true },
      (err, addresses) => {
        if (err) return callback(err, '', 0);
        const list: LookupAddress[] = addresses;
        if (list.length === 0)
          return callback(Object.assign(new Error('no address'), { code: 'ENODATA' }), '', 0);
        for (const a of list) {
          const why = this.#policy.refusal(a.address);
          if (why)
            return callback(
              new OutboundError(
                'blocked_address',
                `${hostname} resolves to a refused address: ${why}${refusalHint(a.address)}`,
              ),
              '',
              0,
            );
        }
        if (options.all) return callback(null, list);
        const first = list[0]!;
        callback(null, first.address, first.family);
      },
    );
  };

  async post(
    url: string,
    body: string,
    headers: Record<string, string>,
    opts: { signal?: AbortSignal; timeoutMs?: number } = {},
  ): Promise<OutboundResponse> {
    const target = this.#target(url);
    if (target instanceof OutboundError) throw target;
    if (opts.signal?.aborted) throw new OutboundError('timeout', 'cancelled before it started');
    return this.#send(target, body, headers, opts.timeoutMs ?? this.#timeoutMs, opts.signal);
  }

  /**
   * A URL parsed and judged (scheme, literal IP host), or why it is refused; kept for the next call to
   * the same URL (a bot's deliveries all go to one), up to TARGETS_KEPT URLs.
   */
  #target(url: string): Target | OutboundError {
    let t = this.#targets.get(url);
    if (t !== undefined) return t;
    t = judgeTarget(url, this.#policy);
    if (this.#targets.size >= TARGETS_KEPT) this.#targets.clear();
    this.#targets.set(url, t);
    return t;
  }

  #send(
    target: Target,
    body: string,
    headers: Record<string, string>,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<OutboundResponse> {
    const started = performance.now();
    const maxBytes = this.#maxResponseBytes;
    const request: Dispatcher.DispatchOptions = {
      origin: target.origin,
      path: target.path,
      method: 'POST',
      headers: target.authorization ? { ...headers, authorization: target.authorization } : headers,
      body,
    };
    return new Promise<OutboundResponse>((resolve, reject) => {
      let settled = false;
      // The request under way (once undici has a connection for it), to abort on the deadline.
      let controller: Dispatcher.DispatchController | undefined;
      const settle = (outcome: OutboundResponse | OutboundError) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        calls?.delete(onAbort);
        if (outcome instanceof OutboundError) {
          controller?.abort(outcome);
          reject(outcome);
        } else resolve(outcome);
      };
      const timer = setTimeout(
        () => settle(new OutboundError('timeout', `no complete answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const onAbort = () => settle(new OutboundError('timeout', 'cancelled'));
      const calls = signal && this.#callsOf(signal);
      calls?.add(onAbort);

      const attempt = (retried: boolean) => {
        let status = 0;
        let answerHeaders: IncomingHttpHeaders = {};
        let answered = false;
        const chunks: Buffer[] = [];
        let kept = 0;
        const done = () =>
          settle({
            status,
            headers: flattenHeaders(answerHeaders),
            body: Buffer.concat(chunks).toString('utf8'),
            durationMs: Math.round(performance.now() - started),
          });
        const handler: Dispatcher.DispatchHandler = {
          onRequestStart(c) {
            // Settled while it waited for a connection (deadline, abort): it is not sent.
            if (settled) c.abort(new OutboundError('timeout', 'cancelled'));
            else controller = c;
          },
          onResponseStart(_c, statusCode, h) {
            if (statusCode < 200) return; // 1xx: the answer is still to come
            answered = true;
            status = statusCode;
            answerHeaders = h;
          },
          onResponseData(c, chunk) {
            const room = maxBytes - kept;
            if (room > 0) {
              chunks.push(room >= chunk.length ? chunk : chunk.subarray(0, room));
              kept += Math.min(room, chunk.length);
            }
            // Enough read: answer now and drop the connection rather than drain an endless body.
            if (kept >= maxBytes) {
              done();
              c.abort(new OutboundError('response', 'answer cut at its size limit'));
            }
          },
          onResponseEnd: done,
          onResponseError: (_c, err) => {
            // A kept-alive connection the receiver closed just as we reused it (it had already carried
            // answers): nothing reached the receiver's application, so the request is sent once more,
            // on a fresh connection.
            if (!answered && !retried && !settled && closedAfterReuse(err)) attempt(true);
            else settle(classify(err, answered));
          },
        };
        this.#agent.dispatch(request, handler);
      };
      attempt(false);
    });
  }

  /** The calls under way with `signal`: all cancelled when it aborts. */
  #callsOf(signal: AbortSignal): Set<() => void> {
    let calls = this.#underWay.get(signal);
    if (!calls) {
      const set = (calls = new Set());
      this.#underWay.set(signal, set);
      signal.addEventListener('abort', () => {
        for (const cancel of [...set]) cancel();
      });
    }
    return calls;
  }

  /** Closes the pooled connections (on shutdown). */
  close(): void {
    this.#agent.destroy().catch(() => undefined);
  }
}

/** undici's error for a connection closed under a request, when that connection had read answers before. */
function closedAfterReuse(err: unknown): boolean {
  const e = err as { code?: string; socket?: { bytesRead?: number } };
  return (e?.code === 'UND_ERR_SOCKET' || e?.code === 'ECONNRESET') && (e.socket?.bytesRead ?? 0) > 0;
}

/** net passes the family as 4, 6, 0 or, in newer Node versions, 'IPv4' / 'IPv6'. */
const familyNumber = (f: number | string | undefined): number =>
  f === 'IPv4' ? 4 : f === 'IPv6' ? 6 : Number(f ?? 0);

function flattenHeaders(h: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}
