/**
 * Slot accounting of the webhook worker (worker.ts): per endpoint (webhook URL), per organization and
 * in all. The worker decides what may start or be leased; these are the counters and the rules.
 *
 * Endpoints: the per-endpoint limit (WORKROOM_WEBHOOK_CONCURRENCY_PER_ENDPOINT) applies to a webhook
 * URL, whichever bots point at it: the key is the URL's scheme, host (lower case), port (without the
 * scheme's default) and path; the query and fragment are left out, so `…/hook?bot=1` and `…/hook?bot=2`
 * are one endpoint. A built-in bot is an endpoint of its own with one slot (its events one at a time).
 *
 * Svix-style back-off: an attempt that times out halves its endpoint's limit (down to 1), a delivered
 * attempt doubles it back (up to the configured limit). A "degraded" endpoint (limit below the
 * configured one) also gets no queue of leased deliveries: its next delivery is leased only when a slot
 * of its own is free, so rows waiting for a dead receiver stay in the table instead of holding slots of
 * the worker, and it never takes more than its organization's share (below).
 *
 * Organizations: each may hold at most `share` (WORKROOM_WEBHOOK_ORG_SHARE, default half) of the
 * attempts in flight (WORKROOM_WEBHOOK_CONCURRENCY) and of the deliveries the worker holds (running,
 * leased, reserved) while another organization is active or waiting; alone, it may use all of them,
 * but only through endpoints that may borrow: not degraded, and proven (one delivery made since the
 * worker started or last forgot it). So receivers that never answered hold at most their
 * organization's share from their first attempt on, not all the slots for one time-out.
 */

/** How long a sign that an organization waits for slots counts (ms). */
const WANT_MS = 1000;

export interface Endpoint {
  readonly key: string;
  /** The configured limit: 1 for a built-in bot, else WORKROOM_WEBHOOK_CONCURRENCY_PER_ENDPOINT. */
  readonly full: number;
  /** Rounds of its limit it may hold while healthy (`roundOf`). */
  readonly rounds: number;
  /** Attempts at once now: `full`, halved by each time-out down to 1, doubled by each delivery. */
  limit: number;
  /** Attempts sending now (a request to the endpoint in flight): at most `limit`. */
  running: number;
  /** Deliveries of its bots held by the worker (running, answered, leased, reserved): at most `round`. */
  held: number;
  /** The bots in the worker that send to it (their deliveries take turns for its slots). */
  readonly bots: Set<string>;
  /** It delivered since the worker last forgot it (see `mayBorrow`). */
  proven: boolean;
}

/**
 * Deliveries an endpoint may hold: `rounds` of its limit (throughput.ts: its attempts running, answered
 * but not yet recorded, and leased waiting), one round (no queue) while degraded.
 */
export function roundOf(ep: Endpoint): number {
  return ep.limit < ep.full ? ep.limit : ep.rounds * ep.limit;
}

export function degraded(ep: Endpoint): boolean {
  return ep.limit < ep.full;
}

/** Whether an endpoint's attempts may go beyond their organization's share (when it is alone). */
export function mayBorrow(ep: Endpoint): boolean {
  return ep.proven && ep.limit >= ep.full;
}

/** The endpoint key of a webhook URL (see above); an unparsable URL is its own key. */
export function urlKey(url: string): string {
  try {
    const u = new URL(url);
    // URL lower-cases the host and drops the scheme's default port.
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return url;
  }
}

export class Endpoints {
  readonly #map = new Map<string, Endpoint>();
  /** Webhook URL → endpoint key, bounded (the same few URLs come back with every delivery). */
  readonly #keys = new Map<string, string>();
  constructor(
    private readonly perEndpoint: number,
    private readonly rounds: number,
  ) {}

  /** The endpoint key of a delivery's receiver. */
  #keyOf(botId: string, target: { webhook_url: string | null; builtin: string | null } | undefined): string {
    if (!target) return `bot:${botId}`;
    if (target.builtin !== null) return `builtin:${botId}`;
    const url = target.webhook_url;
    if (!url) return `bot:${botId}`;
    let k = this.#keys.get(url);
    if (k === undefined) {
      k = `url:${urlKey(url)}`;
      if (this.#keys.size >= 10_000) this.#keys.clear();
      this.#keys.set(url, k);
    }
    return k;
  }

  get(botId: string, target: { webhook_url: string | null; builtin: string | null } | undefined): Endpoint {
    const key = this.#keyOf(botId, target);
    let ep = this.#map.get(key);
    if (!ep) {
      const full = key.startsWith('builtin:') ? 1 : this.perEndpoint;
      const rounds = this.rounds;
      ep = { key, full, rounds, limit: full, running: 0, held: 0, bots: new Set(), proven: false };
      this.#map.set(key, ep);
    }
    return ep;
  }

  peek(key: string): Endpoint | undefined {
    return this.#map.get(key);
  }

  /** An attempt timed out: half the slots (at least one). */
  timedOut(ep: Endpoint): void {
    ep.limit = Math.max(1, Math.floor(ep.limit / 2));
  }

  /** An attempt delivered: twice the slots (at most the configured limit). */
  delivered(ep: Endpoint): void {
    ep.proven = true;
    if (ep.limit < ep.full) ep.limit = Math.min(ep.full, ep.limit * 2);
  }

  /**
   * An endpoint may have gone idle. Endpoints are kept while idle (their limit and whether they
   * delivered count for their next deliveries: forgetting a healthy one whenever its bots paused cost
   * a single organization's burst its borrowing); once there are 10,000, the idle ones are forgotten.
   */
  release(_ep: Endpoint): void {
    if (this.#map.size > 10_000)
      for (const [k, e] of this.#map)
        if (e.held === 0 && e.running === 0 && e.bots.size === 0) this.#map.delete(k);
  }
}

interface OrgCount {
  running: number;
  held: number;
}

export class OrgShares {
  readonly #orgs = new Map<string, OrgCount>();
  /** Organizations that wanted slots and did not get them: until when that counts (ms). */
  readonly #wanting = new Map<string, number>();
  /** Attempts in flight / deliveries held that one organization may have while others are about. */
  readonly runShare: number;
  readonly holdShare: number;

  constructor(share: number, concurrency: number, holdMax: number) {
    this.runShare = Math.max(1, Math.floor(share * concurrency));
    this.holdShare = Math.max(1, Math.floor(share * holdMax));
  }

  #of(org: string): OrgCount {
    let o = this.#orgs.get(org);
    if (!o) this.#orgs.set(org, (o = { running: 0, held: 0 }));
    return o;
  }

  running(org: string): number {
    return this.#orgs.get(org)?.running ?? 0;
  }

  held(org: string): number {
    return this.#orgs.get(org)?.held ?? 0;
  }

  addRunning(org: string, n: number): void {
    const o = this.#of(org);
    o.running += n;
    this.#dropIfIdle(org, o);
  }

  addHeld(org: string, n: number): void {
    const o = this.#of(org);
    o.held += n;
    if (n > 0) this.#wanting.delete(org);
    this.#dropIfIdle(org, o);
  }

  #dropIfIdle(org: string, o: OrgCount): void {
    if (o.running === 0 && o.held === 0) this.#orgs.delete(org);
  }

  /** This organization wanted a slot (held, or to run) and did not get one. */
  want(org: string): void {
    this.#wanting.set(org, performance.now() + WANT_MS);
  }

  /** Whether an organization other than `org` holds deliveries or wanted some lately. */
  othersAbout(org: string): boolean {
    for (const o of this.#orgs.keys()) if (o !== org) return true;
    if (this.#wanting.size === 0) return false;
    const now = performance.now();
    for (const [o, until] of this.#wanting) {
      if (until < now) this.#wanting.delete(o);
      else if (o !== org) return true;
    }
    return false;
  }

  /**
   * Whether `org` may hold one more delivery beyond `extra` already taken, for an endpoint that may
   * borrow or not: below its share always; beyond it only alone (`othersSeen`: another organization's
   * rows are in the same claim), and only for an endpoint that may borrow.
   */
  mayHold(org: string, extra: number, borrow: boolean, othersSeen: boolean): boolean {
    if (this.held(org) + extra < this.holdShare) return true;
    return borrow && !othersSeen && !this.othersAbout(org);
  }

  /**
   * Organizations at or over their share of held deliveries while others are about, or at all
   * (`strict`): claims do not look at their rows.
   */
  overShare(strict: boolean): string[] {
    const out: string[] = [];
    for (const [org, o] of this.#orgs)
      if (o.held >= this.holdShare && (strict || this.othersAbout(org))) out.push(org);
    return out;
  }
}
