import { setMaxListeners } from 'node:events';
import type { Selectable } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { EventData } from '../domain/events.js';
import { newId, nowIso } from '../domain/ids.js';
import { decryptSecret } from '../domain/secrets.js';
import type { DeliveryRow, NotificationRow } from '../storage/schema.js';
import type { Storage } from '../storage/storage.js';
import type { DeliveredAttempt, DeliveryTarget } from '../storage/stores/deliveries.js';
import type { Stores } from '../storage/stores/index.js';
import type { InProcessReceiver } from './in-process.js';
import { OutboundError, type OutboundClient } from './outbound.js';
import { Pacer } from './pacer.js';
import { retryDelayMs } from './schedule.js';
import { signDelivery } from './sign.js';

/**
 * The webhook worker: a durable state machine over `webhook_deliveries` (Svix's worker is the model).
 *
 *   pending ──lease──▶ sending ──2xx──▶ delivered
 *      ▲                  │ failure, retries left: pending at now + delay (jitter, Retry-After)
 *      └──────────────────┤ failure, none left / 410 / bot gone: failed (+ owners notified)
 *
 * "sending" is not a stored state: a lease moves next_attempt_at to the end of the lease. If the process
 * dies mid-attempt, nothing is recorded and the delivery is simply due again when the lease ends: at
 * least once, and every attempt carries the delivery id as `webhook-id`, so receivers drop duplicates.
 * Each finished attempt is recorded (time, status, duration, error, the first 1 KB of the answer) in
 * the same transaction as the delivery's next state.
 *
 * Where work comes from:
 *  - **hand-off**: the fan-out inserts a new delivery already leased when this worker has a free slot
 *    for its bot (`reserve`), and hands it over after its commit (`handOff`): no claim, no polling;
 *  - **claims**: due deliveries (those the fan-out could not hand over, retries, redeliveries, leases
 *    run out) are leased in batches (`due` + `lease`, one transaction, SKIP LOCKED on PostgreSQL) when
 *    slots are free, on a wake-up, at the earliest retry, or on the poll (other instances' work).
 * Finished attempts are recorded in batches: one transaction for all the attempts that ended in the
 * same turn of the event loop.
 *
 * Isolation: attempts in flight are bounded overall and per bot, and neither a claim nor a hand-off
 * takes more of a bot's deliveries than its slots and one round of queue (which its lease covers), so
 * a receiver that hangs holds at most its own slots (each for at most the time-out) while every other
 * bot's deliveries keep flowing. Leased deliveries count against WORKROOM_WEBHOOK_CONCURRENCY.
 *
 * Built-in bots (`bots.builtin` set) are delivered in process through `inProcess`
 * (delivery/in-process.ts) instead of HTTP: no URL or secret, the same attempts, log and retries, and
 * one delivery at a time per bot, so a built-in bot's handler sees its events one after the other in
 * outbox order (a failed delivery is retried later while the next ones go on).
 *
 * Order: a bot's deliveries are taken in outbox order. The fan-out hands a delivery over directly only
 * while the bot has no due delivery waiting in the table (`noteBacklog`), so that a new event never
 * overtakes an older one still waiting for a slot.
 */

export interface WorkerOptions {
  storage: Storage;
  log: Logger;
  webhooks: Config['webhooks'];
  encryptionKey: Buffer;
  client: OutboundClient;
  /** Fallback poll for due retries and work of other instances. */
  pollMs?: number;
  /** Receives the deliveries of built-in bots; without it they are not sent (they fail, final). */
  inProcess?: InProcessReceiver;
  /** Paces background work while requests are served (delivery/pacer.ts). */
  pacer?: Pacer;
}

/** A leased delivery with what sending it needs. */
export interface Claimed {
  row: Selectable<DeliveryRow>;
  /** The event's data as JSON text. */
  data: string;
  target: DeliveryTarget | undefined;
}

const SNIPPET_BYTES = 1024;
/**
 * Deliveries this worker holds (running, waiting leased in memory, reserved), in all: this many times
 * WORKROOM_WEBHOOK_CONCURRENCY. On PostgreSQL several rounds wait, and a claim waits until a round is
 * free, so that attempts go on while the next claim is in flight (a claim takes tens of milliseconds
 * there under load: with one round of queue the attempts ran dry before it came back, and a backlog
 * went out at ~1,800/s with half the event loop idle). On SQLite a claim is quick but runs on the event
 * loop: one round of queue and small claims as soon as an eighth of a round is free (larger ones cost
 * it a third of its deliveries a second). Per bot it stays two rounds of its own limit (see "Order").
 */
const HELD_ROUNDS = { postgres: 8, sqlite: 2 };
/**
 * PostgreSQL: record batches written at once. An attempt holds its bot's slot until recorded; with one
 * batch at a time, attempts that ended during a write waited for it and the next (tens of milliseconds
 * under load), and the slots sat idle.
 */
const RECORD_LANES = 3;
/** Due rows a claim looks at, at most (earliest first). */
const SCAN_MAX = 1000;
/** Claims after attempts end come at most this often (ms). */
const CLAIM_EVERY_MS = 2;
/** Finished attempts recorded per transaction, at most. */
const RECORD_BATCH = 500;

interface BotSlots {
  /** Attempts at once: 1 for a built-in bot, else WORKROOM_WEBHOOK_CONCURRENCY_PER_ENDPOINT. */
  limit: number;
  /** Attempts sending now (a request to the bot's endpoint in flight): at most `limit`. */
  running: number;
  /** Attempts answered, waiting to be recorded: they still count against the bot's round (below). */
  recording: number;
  /**
   * Leased, waiting for one of the bot's slots: at most `limit` (one round), which the lease covers,
   * so that the next attempts are at hand when slots free up without a claim for each.
   */
  queue: Claimed[];
  /** Slots promised to the fan-out for deliveries it is inserting. */
  reserved: number;
}

interface Finished {
  c: Claimed;
  attempt: number;
  startedAt: string;
  result: AttemptResult;
  /** Called once it is recorded: the attempt no longer counts against its bot's round. */
  recorded: () => void;
}

export class DeliveryWorker {
  readonly #o: WorkerOptions;
  readonly #pacer: Pacer;
  /** SQLite: transactions run on the event loop (see Pacer.measure). */
  readonly #sync: boolean;
  readonly #pollMs: number;
  readonly #leaseMs: number;
  readonly #perBot = new Map<string, BotSlots>();
  /**
   * Running + queued + reserved, over all bots: at most `#holdMax` (HELD_ROUNDS);
   * attempts running (`#running`): at most WORKROOM_WEBHOOK_CONCURRENCY.
   */
  #held = 0;
  get #holdMax(): number {
    return (this.#sync ? HELD_ROUNDS.sqlite : HELD_ROUNDS.postgres) * this.#o.webhooks.concurrency;
  }
  #running = 0;
  /** Deliveries leased by this worker and not yet recorded or handed back: never claimed twice. */
  readonly #heldIds = new Set<string>();
  /**
   * Due deliveries waiting in the table (see "Order"): per bot, those the fan-out inserted due and no
   * claim has leased yet (it may dip below 0 for a moment: a claim can lease rows before the fan-out's
   * post-commit step counts them); the bots whose fresh rows the last complete look at the due rows
   * had to leave; and `#dueUnknown`: the due rows were more than one look, any bot may have some.
   */
  readonly #waiting = new Map<string, number>();
  #skipped = new Set<string>();
  #dueUnknown = true;
  readonly #active = new Set<Promise<void>>();
  readonly #abort = new AbortController();
  #claiming: Promise<void> | undefined;
  #again = false;
  #timer: NodeJS.Timeout | undefined;
  #dueTimer: NodeJS.Timeout | undefined;
  #pruneTimer: NodeJS.Timeout | undefined;
  #stopping = false;
  #soon = false;
  #lastClaim = -Infinity;
  readonly #records: Finished[] = [];
  /** Record batches being written (up to RECORD_LANES on PostgreSQL, one on SQLite). */
  readonly #recordLanes = new Set<Promise<void>>();
  #recordSoon = false;
  #recordRetry: NodeJS.Timeout | undefined;
  #draining: Promise<void> | undefined;
  /** Attempts cut off by shutdown: their deliveries are handed back, nothing is recorded. */
  readonly #cancelled: string[] = [];
  /** Decrypted signing secrets by their stored (encrypted) form. */
  readonly #secrets = new Map<string, string>();

  constructor(opts: WorkerOptions) {
    this.#o = opts;
    this.#pacer = opts.pacer ?? new Pacer();
    this.#sync = opts.storage.dialect === 'sqlite';
    this.#pollMs = opts.pollMs ?? 500;
    // Every attempt in flight listens on the one shutdown signal (up to WORKROOM_WEBHOOK_CONCURRENCY).
    setMaxListeners(0, this.#abort.signal);
    // Long enough that a live worker always records before its lease runs out: the time-out, plus
    // the wait of a delivery queued behind its bot's other slots or the slots in all (one round of
    // queue: at most one time-out each), plus slack.
    this.#leaseMs = 3 * opts.webhooks.timeoutMs + 5_000;
  }

  start(): void {
    this.#timer = setInterval(() => this.wake(), this.#pollMs);
    this.#timer.unref();
    const pruneEvery = Math.min(60_000, Math.max(1000, this.#o.webhooks.retentionMs / 10));
    this.#pruneTimer = setInterval(() => void this.prune(), pruneEvery);
    this.#pruneTimer.unref();
    this.wake();
  }

  /** Whether built-in bots can be delivered to (an in-process receiver was given). */
  get inProcess(): boolean {
    return this.#o.inProcess !== undefined;
  }

  /** Whether the built-in bot receives this event from its whole organization (bots/: orgEvents). */
  reachesOrganization(builtin: string | null, type: string, data: Record<string, unknown>): boolean {
    if (builtin === null) return false;
    return this.#o.inProcess?.receivesFromOrganization?.(builtin, type, data) ?? false;
  }

  // --- hand-off from the fan-out ---

  /** The end of a lease taken now. */
  leaseUntil(): string {
    return new Date(Date.now() + this.#leaseMs).toISOString();
  }

  /**
   * Takes a slot for a delivery of this bot that the fan-out is about to insert (leased), if one is
   * free now and handing over keeps the bot's order; `false`: insert it as due, to be claimed.
   */
  reserve(target: DeliveryTarget & { paused: boolean }): boolean {
    if (this.#stopping || target.paused || this.#dueUnknown) return false;
    if ((this.#waiting.get(target.bot_id) ?? 0) > 0 || this.#skipped.has(target.bot_id)) return false;
    // Not paced here: a delivery handed over starts at once and is charged; the next pass waits for it.
    if (this.#held >= this.#holdMax) return false;
    const b = this.#slots(target.bot_id, target.builtin);
    if (b.running + b.recording + b.queue.length + b.reserved >= 2 * b.limit) return false;
    b.reserved++;
    this.#held++;
    return true;
  }

  /** Gives back a slot taken by `reserve` (the fan-out's transaction failed, or the row existed). */
  unreserve(botId: string): void {
    const b = this.#perBot.get(botId);
    if (!b || b.reserved === 0) return;
    b.reserved--;
    this.#held--;
    this.#dropIfIdle(botId, b);
  }

  /** The reserved deliveries, committed: sends them. */
  handOff(items: Claimed[]): void {
    for (const c of items) {
      const b = this.#perBot.get(c.row.bot_id);
      if (!b || b.reserved === 0) continue; // not reserved: cannot happen
      b.reserved--;
      this.#heldIds.add(c.row.id);
      b.queue.push(c);
      this.#startNext(c.row.bot_id);
    }
  }

  /** The fan-out inserted `n` due (not handed over) deliveries of this bot: they go first. */
  noteBacklog(botId: string, n = 1): void {
    this.#count(botId, n);
  }

  #count(botId: string, n: number): void {
    const left = (this.#waiting.get(botId) ?? 0) + n;
    if (left === 0) this.#waiting.delete(botId);
    else this.#waiting.set(botId, left);
  }

  // --- claiming ---

  /** Look for due deliveries now (new deliveries, a redelivery, a resumed webhook). */
  wake(): void {
    if (this.#stopping) return;
    if (this.#claiming) {
      this.#again = true;
      return;
    }
    this.#claiming = this.#claimLoop()
      .catch((err: unknown) => this.#o.log.error({ err }, 'webhook claim failed'))
      .finally(() => (this.#claiming = undefined));
  }

  /**
   * After an attempt ends: attempts that end in the same turn, or within CLAIM_EVERY_MS of the last
   * claim, share one claim (a claim for every attempt that ends would cost more than the attempts).
   */
  #wakeSoon(): void {
    if (this.#soon) return;
    this.#soon = true;
    const wait = this.#lastClaim + CLAIM_EVERY_MS - performance.now();
    const go = () => {
      this.#soon = false;
      this.wake();
    };
    if (wait > 0) setTimeout(go, wait);
    else setImmediate(go);
  }

  async #claimLoop(): Promise<void> {
    const { concurrency } = this.#o.webhooks;
    // Claims come in batches: with most slots taken, wait until enough are free (attempts ending wake
    // us); on PostgreSQL the rounds still held keep the attempts going meanwhile (HELD_ROUNDS).
    const worthIt =
      this.#held === 0 ? 1 : this.#sync ? Math.max(1, Math.floor(concurrency / 8)) : concurrency;
    let exhausted = false;
    do {
      this.#again = false;
      for (;;) {
        const free = this.#holdMax - this.#held;
        if (free < worthIt || this.#stopping) return;
        await this.#pacer.ready();
        if (this.#stopping) return;
        const r = await this.#claimOnce(this.#holdMax - this.#held);
        exhausted = r.exhausted;
        if (exhausted) break;
      }
    } while (this.#again && !this.#stopping);
    if (exhausted) await this.#armDueTimer();
  }

  async #claimOnce(free: number): Promise<{ exhausted: boolean }> {
    this.#lastClaim = performance.now();
    const busyBots = [...this.#perBot]
      .filter(([, b]) => b.running + b.recording + b.queue.length + b.reserved >= 2 * b.limit)
      .map(([id]) => id);
    const scan = Math.min(SCAN_MAX, Math.max(64, free * 4));
    const nowMs = Date.now();
    const now = new Date(nowMs).toISOString();
    const skipped = new Set<string>(); // bots with fresh rows left due by this claim
    let scanned = 0;
    const claimed = await this.#o.storage.transaction(async (stores) => {
      // On SQLite the claim keeps the loop (and the writer) busy; on PostgreSQL it waits for the database.
      const measured = this.#sync ? this.#pacer.measure() : () => undefined;
      const due = await stores.deliveries.due({ now, limit: scan, busyBots });
      scanned = due.length;
      // Outbox order among rows due at the same moment (a fan-out pass inserts them with one time).
      const candidates = due
        .filter((d) => !this.#heldIds.has(d.id))
        .sort((a, b) =>
          a.next_attempt_at < b.next_attempt_at
            ? -1
            : a.next_attempt_at > b.next_attempt_at
              ? 1
              : (a.event_position ?? 0) - (b.event_position ?? 0),
        );
      if (candidates.length === 0) return [];
      const targets = await stores.deliveries.targets([...new Set(candidates.map((d) => d.bot_id))]);
      const picked: string[] = [];
      const taken = new Map<string, number>();
      for (const d of candidates) {
        if (picked.length >= free) {
          if (d.attempts === 0) skipped.add(d.bot_id);
          continue;
        }
        const b = this.#perBot.get(d.bot_id);
        const limit = this.#limitOf(targets.get(d.bot_id)?.builtin ?? null);
        const n =
          (b ? b.running + b.recording + b.queue.length + b.reserved : 0) + (taken.get(d.bot_id) ?? 0);
        if (n >= 2 * limit) {
          if (d.attempts === 0) skipped.add(d.bot_id);
          continue;
        }
        taken.set(d.bot_id, (taken.get(d.bot_id) ?? 0) + 1);
        picked.push(d.id);
      }
      const rows = await stores.deliveries.lease(picked, now, new Date(nowMs + this.#leaseMs).toISOString());
      const data = await stores.deliveries.eventData(
        rows.map((r) => r.event_seq).filter((s): s is number => s !== null),
      );
      // Outbox order within the batch (rows due at the same moment come from one fan-out pass).
      rows.sort((a, b) => (a.event_position ?? 0) - (b.event_position ?? 0));
      measured();
      return rows.map((row) => ({
        row,
        data: row.event_seq !== null ? (data.get(row.event_seq) ?? 'null') : (row.payload ?? 'null'),
        target: targets.get(row.bot_id),
      }));
    });
    for (const c of claimed) {
      // Fresh rows (never attempted) are the ones the fan-out left due and counted.
      if (c.row.attempts === 0 && c.row.event_seq !== null) this.#count(c.row.bot_id, -1);
      this.#enqueue(c);
    }
    const exhausted = scanned < scan;
    // A complete look (fewer due rows than it asked for) knows which bots still have fresh rows due
    // (those of busy bots, not looked at, are counted in #waiting); an incomplete one knows nothing.
    this.#dueUnknown = !exhausted;
    if (exhausted) this.#skipped = skipped;
    return { exhausted };
  }

  /**
   * Whether due rows this worker knows of may be waiting: rows the fan-out left due (counted per bot),
   * bots whose fresh rows the last complete look left, or a look that did not see them all. Retries,
   * redeliveries and resumed webhooks wake the worker themselves (or its due timer, or the poll).
   */
  #mayHaveDue(): boolean {
    if (this.#dueUnknown || this.#skipped.size > 0) return true;
    for (const n of this.#waiting.values()) if (n > 0) return true;
    return false;
  }

  /** Sleeps until the earliest future retry (the poll is the fallback). */
  async #armDueTimer(): Promise<void> {
    if (this.#stopping) return;
    const next = await this.#o.storage.stores.db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.min('next_attempt_at').as('at'))
      .where('state', '=', 'pending')
      .executeTakeFirst();
    const at = next?.at ? Date.parse(next.at) : NaN;
    if (Number.isNaN(at)) return;
    const wait = at - Date.now();
    if (wait <= 0 || wait >= this.#pollMs) return;
    clearTimeout(this.#dueTimer);
    this.#dueTimer = setTimeout(() => this.wake(), wait + 1);
    this.#dueTimer.unref();
  }

  #limitOf(builtin: string | null): number {
    return builtin !== null ? 1 : this.#o.webhooks.perEndpointConcurrency;
  }

  #slots(botId: string, builtin: string | null): BotSlots {
    let b = this.#perBot.get(botId);
    if (!b) {
      b = { limit: this.#limitOf(builtin), running: 0, recording: 0, queue: [], reserved: 0 };
      this.#perBot.set(botId, b);
    }
    return b;
  }

  #dropIfIdle(botId: string, b: BotSlots): void {
    if (b.running === 0 && b.recording === 0 && b.queue.length === 0 && b.reserved === 0)
      this.#perBot.delete(botId);
  }

  #enqueue(c: Claimed): void {
    this.#held++;
    this.#heldIds.add(c.row.id);
    this.#slots(c.row.bot_id, c.target?.builtin ?? null).queue.push(c);
    this.#startNext(c.row.bot_id);
  }

  #startNext(botId: string): void {
    const b = this.#perBot.get(botId);
    if (!b) return;
    const { concurrency } = this.#o.webhooks;
    while (b.running < b.limit && b.queue.length > 0 && this.#running < concurrency && !this.#stopping) {
      const c = b.queue.shift()!;
      b.running++;
      this.#running++;
      // The endpoint's slot frees when the answer is in; the attempt counts against the bot's round
      // (and WORKROOM_WEBHOOK_CONCURRENCY's leases) until it is recorded.
      let sending = true;
      const answered = () => {
        if (!sending) return;
        sending = false;
        b.running--;
        this.#running--;
        b.recording++;
        this.#startNext(botId);
        if (this.#running < concurrency) for (const id of this.#waitingForSlot()) this.#startNext(id);
      };
      let delivered = false;
      const p = this.#attempt(c, answered)
        .then((ok) => {
          delivered = ok;
        })
        .catch((err: unknown) => this.#o.log.error({ err, delivery: c.row.id }, 'webhook attempt failed'))
        .finally(() => {
          this.#active.delete(p);
          if (sending) {
            sending = false;
            b.running--;
            this.#running--;
          } else b.recording--;
          this.#held--;
          this.#dropIfIdle(botId, b);
          this.#startNext(botId);
          // The slot in all that this attempt frees may be another bot's turn.
          if (this.#running < concurrency) for (const id of this.#waitingForSlot()) this.#startNext(id);
          // A claim now only if one may find something: rows left due (counted, or not all seen), or
          // this attempt failed (its retry is due later: the claim that finds nothing arms the timer).
          if (!delivered || this.#mayHaveDue()) this.#wakeSoon();
        });
      this.#active.add(p);
    }
  }

  /** Bots with deliveries queued and a slot of their own free (they wait for a slot in all). */
  *#waitingForSlot(): Generator<string> {
    for (const [id, b] of this.#perBot) {
      if (this.#running >= this.#o.webhooks.concurrency) return;
      if (b.queue.length > 0 && b.running < b.limit) yield id;
    }
  }

  // --- attempts ---

  /** One attempt: sends, calls `answered` once the endpoint is done with it, then records it; true if delivered. */
  async #attempt(c: Claimed, answered: () => void): Promise<boolean> {
    const { row, target } = c;
    const startedAt = nowIso();
    const attempt = row.attempts + 1;
    let result: AttemptResult;
    const gone = !target || target.deleted_at !== null || target.status !== 'active';
    if (gone) {
      result = { final: true, durationMs: 0, error: 'the bot is disabled or deleted; not sent' };
    } else if (target.builtin !== null) {
      result = this.#o.inProcess
        ? await this.#deliverInProcess(c, target.builtin)
        : { final: true, durationMs: 0, error: 'built-in bots are not running on this server; not sent' };
    } else if (!target.webhook_url) {
      result = { final: true, durationMs: 0, error: 'the bot has no webhook URL; not sent' };
    } else if (!target.secret_encrypted) {
      result = { durationMs: 0, error: 'the bot has no webhook secret (POST /api/bots/{id}/webhook-secret)' };
    } else {
      result = await this.#send(c, target, target.webhook_url, target.secret_encrypted);
    }
    if (result.cancelled) {
      this.#cancelled.push(row.id); // handed back by the drain that cancelled it
      return false;
    }
    answered();
    // The attempt counts against its bot's round until it is recorded: a crash then resends at most
    // two rounds of each bot's deliveries, never a growing heap of sent but unrecorded ones.
    await new Promise<void>((recorded) => {
      this.#records.push({ c, attempt, startedAt, result, recorded });
      this.#flushSoon();
    });
    return result.ok === true;
  }

  async #send(
    c: Claimed,
    target: DeliveryTarget,
    url: string,
    secretEncrypted: string,
  ): Promise<AttemptResult> {
    const { row, data } = c;
    const t0 = performance.now();
    const signed = signDelivery({
      secret: this.#secret(secretEncrypted),
      webhookId: row.id,
      timestampSeconds: Math.floor(Date.now() / 1000),
      envelope: {
        event_type: row.event_type,
        timestamp: row.event_created_at,
        bot_id: target.bot_id,
        data: JSON.parse(data) as unknown,
        event_id: row.event_id,
      },
    });
    const sending = this.#o.client.post(url, signed.body, signed.headers, { signal: this.#abort.signal });
    // What this attempt costs the event loop: building, signing and writing the request (measured),
    // and about as much again for reading the answer.
    this.#pacer.charge(2 * (performance.now() - t0));
    try {
      const res = await sending;
      const ok = res.status >= 200 && res.status < 300;
      return {
        status: res.status,
        durationMs: res.durationMs,
        snippet: snippet(res.body),
        ok,
        gone: res.status === 410,
        retryAfter: res.status === 429 || res.status === 503 ? res.headers['retry-after'] : undefined,
        error: ok ? undefined : `HTTP ${res.status}`,
      };
    } catch (err) {
      const durationMs = Math.round(performance.now() - t0);
      if (this.#abort.signal.aborted) return { durationMs, cancelled: true };
      const error = err instanceof OutboundError ? `${err.kind}: ${err.message}` : `error: ${String(err)}`;
      return { durationMs, error };
    }
  }

  /** A built-in bot's delivery: its handler in this process, within the same time-out as HTTP. */
  async #deliverInProcess(c: Claimed, builtin: string): Promise<AttemptResult> {
    const { row, data } = c;
    const t0 = performance.now();
    const ms = () => Math.round(performance.now() - t0);
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const cut = new Promise<'timeout' | 'cancelled'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.#o.webhooks.timeoutMs);
      onAbort = () => resolve('cancelled');
      this.#abort.signal.addEventListener('abort', onAbort, { once: true });
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
          error: `timeout: the built-in bot did not finish within ${this.#o.webhooks.timeoutMs} ms`,
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
      if (onAbort) this.#abort.signal.removeEventListener('abort', onAbort);
    }
  }

  #secret(encrypted: string): string {
    let s = this.#secrets.get(encrypted);
    if (s === undefined) {
      if (this.#secrets.size >= 1000) this.#secrets.clear();
      s = decryptSecret(encrypted, this.#o.encryptionKey);
      this.#secrets.set(encrypted, s);
    }
    return s;
  }

  // --- recording ---

  #flushSoon(): void {
    // A lane at work takes what is recorded meanwhile; on SQLite there is only one.
    if (this.#recordSoon || this.#recordLanes.size >= (this.#sync ? 1 : RECORD_LANES)) return;
    this.#recordSoon = true;
    setImmediate(() => {
      this.#recordSoon = false;
      void this.#flush();
    });
  }

  /**
   * Records the finished attempts, a batch per transaction, in up to RECORD_LANES batches at once on
   * PostgreSQL (one on SQLite, whose writes take turns anyway); resolves when none is left (or it failed).
   */
  #flush(): Promise<void> {
    const lanes = this.#sync ? 1 : RECORD_LANES;
    while (this.#recordLanes.size < lanes && this.#records.length > 0 && !this.#recordRetry) {
      const lane: Promise<void> = this.#recordLane().finally(() => this.#recordLanes.delete(lane));
      this.#recordLanes.add(lane);
    }
    return Promise.all([...this.#recordLanes]).then(() => undefined);
  }

  /** Writes record batches until none is left (or one failed: then a retry is due in a second). */
  async #recordLane(): Promise<void> {
    while (this.#records.length > 0) {
      const batch = this.#records.splice(0, RECORD_BATCH);
      try {
        if (!this.#sync && batch.every((f) => f.result.ok)) {
          // PostgreSQL, all delivered: one statement, atomic by itself (no transaction round trips).
          await this.#recordBatch(this.#o.storage.stores, batch);
        } else {
          await this.#o.storage.transaction(async (stores) => {
            const measured = this.#sync ? this.#pacer.measure() : () => undefined;
            await this.#recordBatch(stores, batch);
            measured();
          });
        }
      } catch (err) {
        if (this.#stopping) {
          // Shutting down: not recorded, so sent again when their leases end (at least once).
          this.#o.log.warn({ err }, 'could not record webhook attempts at shutdown');
          for (const f of batch) f.recorded();
          continue;
        }
        // Their leases keep them from being sent again meanwhile; try again in a second.
        this.#records.unshift(...batch);
        this.#o.log.error({ err }, 'could not record webhook attempts; retrying');
        if (!this.#recordRetry) {
          this.#recordRetry = setTimeout(() => {
            this.#recordRetry = undefined;
            void this.#flush();
          }, 1000);
          this.#recordRetry.unref();
        }
        return;
      }
      for (const f of batch) {
        this.#heldIds.delete(f.c.row.id);
        f.recorded();
      }
    }
  }

  async #recordBatch(stores: Stores, batch: Finished[]): Promise<void> {
    const now = nowIso();
    const delivered: DeliveredAttempt[] = [];
    for (const f of batch) {
      if (!f.result.ok) continue;
      delivered.push({
        attemptId: newId(),
        deliveryId: f.c.row.id,
        botId: f.c.row.bot_id,
        attempt: f.attempt,
        startedAt: f.startedAt,
        durationMs: f.result.durationMs,
        status: f.result.status ?? null,
        snippet: f.result.snippet ?? null,
      });
    }
    await stores.deliveries.recordDelivered(delivered, now);
    for (const f of batch) if (!f.result.ok) await this.#recordFailure(stores, f, now);
  }

  async #recordFailure(
    stores: Stores,
    { c, attempt, startedAt, result: r }: Finished,
    now: string,
  ): Promise<void> {
    const { row, target } = c;
    await stores.deliveries.recordAttempt({
      id: newId(),
      delivery_id: row.id,
      attempt,
      started_at: startedAt,
      duration_ms: r.durationMs,
      status: r.status ?? null,
      error: r.error ?? null,
      response_snippet: r.snippet ?? null,
    });
    const common = {
      attempts: attempt,
      last_attempt_at: startedAt,
      last_status: r.status ?? null,
      updated_at: now,
    };
    if (r.gone && target) {
      // 410 Gone: the receiver says this webhook is no more. Turn it off; the rest would fail too.
      const error = 'HTTP 410 Gone: the webhook URL was removed from the bot';
      await stores.deliveries.update(row.id, {
        ...common,
        state: 'failed',
        last_error: error,
        next_attempt_at: now,
      });
      await stores.bots.update(row.bot_id, { webhook_url: null }, now);
      await stores.deliveries.failPending(row.bot_id, 'not sent: the webhook answered 410 Gone before', now);
      await notifyOwners(
        stores,
        target,
        now,
        'webhook.disabled',
        `The webhook of ${target.name} was turned off`,
        `Its receiver answered 410 Gone to delivery ${row.id}. Set a webhook URL again to resume.`,
        row.id,
      );
      return;
    }
    const delay = r.final ? null : retryDelayMs(attempt, this.#o.webhooks.retryDelaysMs, r.retryAfter);
    if (delay === null) {
      await stores.deliveries.update(row.id, {
        ...common,
        state: 'failed',
        last_error: r.error ?? null,
        next_attempt_at: now,
      });
      if (target)
        await notifyOwners(
          stores,
          target,
          now,
          'webhook.failed',
          `A webhook delivery to ${target.name} failed`,
          `${row.event_type} (delivery ${row.id}) failed after ${attempt} attempt(s): ${r.error ?? 'unknown error'}. ` +
            'You can redeliver it from the delivery log.',
          row.id,
        );
    } else {
      const next = new Date(Date.now() + delay).toISOString();
      await stores.deliveries.update(row.id, {
        ...common,
        state: 'pending',
        last_error: r.error ?? null,
        next_attempt_at: next,
      });
    }
    if (!target || r.final) return;
    const health = await stores.deliveries.countFailure(row.bot_id, now);
    const limit = this.#o.webhooks.pauseAfter;
    if (limit > 0 && health.consecutive_failures >= limit && !health.paused_at) {
      await stores.deliveries.putHealth({
        ...health,
        paused_at: now,
        paused_reason: `${health.consecutive_failures} failed attempts in a row`,
        updated_at: now,
      });
      await notifyOwners(
        stores,
        target,
        now,
        'webhook.paused',
        `The webhook of ${target.name} was paused`,
        `${health.consecutive_failures} attempts in a row failed (last: ${r.error ?? 'unknown'}). ` +
          'Its deliveries are kept; resume it when the receiver works again.',
        row.id,
      );
    }
  }

  /** Makes leased deliveries due again now (shutdown, cancelled attempts). */
  async #release(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    try {
      const now = nowIso();
      await this.#o.storage.transaction((s) =>
        s.db
          .updateTable('webhook_deliveries')
          .set({ next_attempt_at: now })
          .where('id', 'in', ids)
          .where('state', '=', 'pending')
          .execute(),
      );
    } catch (err) {
      // Their leases run out anyway; they are only sent a little later.
      this.#o.log.warn({ err }, 'could not hand back leased deliveries');
    }
    for (const id of ids) this.#heldIds.delete(id);
  }

  // --- shutdown and retention ---

  /**
   * Stops taking work and waits for attempts in flight until shortly before `deadlineMs` (epoch ms);
   * then cancels the rest and hands their deliveries back (due now, nothing recorded), so that the next
   * start sends them at once, with the same webhook-id. The attempts that finished are recorded before
   * it resolves; the margin before the deadline is for that and the hand-back.
   */
  drain(deadlineMs: number): Promise<void> {
    this.#draining ??= this.#drain(deadlineMs);
    return this.#draining;
  }

  async #drain(deadlineMs: number): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#timer);
    clearInterval(this.#pruneTimer);
    clearTimeout(this.#dueTimer);
    await this.#claiming;
    const queued = [...this.#perBot.values()].flatMap((b) => b.queue.splice(0));
    this.#held -= queued.length;
    const left = Math.max(0, deadlineMs - Date.now());
    const margin = Math.min(500, left / 5);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.#active]),
      new Promise((r) => (timer = setTimeout(r, left - margin))),
    ]);
    clearTimeout(timer);
    this.#abort.abort();
    // Attempts that ended wait for their records: write them now (a failure no longer retries).
    clearTimeout(this.#recordRetry);
    void this.#flush();
    await Promise.allSettled([...this.#active]);
    await this.#release([...queued.map((c) => c.row.id), ...this.#cancelled.splice(0)]);
    await Promise.allSettled([...this.#recordLanes]);
    await this.#flush();
  }

  /** After `drain` (waits for it to end), or at once. */
  async stop(): Promise<void> {
    await this.drain(Date.now());
  }

  /** Deletes delivered and failed deliveries older than the retention, a batch at a time. */
  async prune(): Promise<number> {
    const before = new Date(Date.now() - this.#o.webhooks.retentionMs).toISOString();
    let total = 0;
    try {
      for (;;) {
        const n = await this.#o.storage.transaction((s) => s.deliveries.prune(before, 1000));
        total += n;
        if (n < 1000 || this.#stopping) break;
      }
    } catch (err) {
      this.#o.log.error({ err }, 'webhook delivery pruning failed');
    }
    return total;
  }
}

interface AttemptResult {
  durationMs: number;
  status?: number | null;
  ok?: boolean;
  gone?: boolean;
  /** No retry: the bot cannot receive anything. */
  final?: boolean;
  cancelled?: boolean;
  retryAfter?: string | undefined;
  error?: string | undefined;
  snippet?: string | undefined;
}

function snippet(body: string): string {
  const b = Buffer.from(body, 'utf8');
  return b.length <= SNIPPET_BYTES ? body : b.subarray(0, SNIPPET_BYTES).toString('utf8');
}

async function notifyOwners(
  stores: Stores,
  target: DeliveryTarget,
  now: string,
  kind: string,
  title: string,
  body: string,
  deliveryId: string,
): Promise<void> {
  if (!target.created_by || !(await stores.users.get(target.created_by))) return;
  const row: NotificationRow = {
    id: newId(),
    org_id: target.org_id,
    user_id: target.created_by,
    kind,
    title,
    body,
    data: JSON.stringify({ bot_id: target.bot_id, delivery_id: deliveryId }),
    created_at: now,
    read_at: null,
  };
  await stores.notifications.insertMany([row]);
  // Internal event (never delivered to webhooks): the notifications bot relays it as a DM (bots/).
  const event: EventData<'notification.created'> = {
    notification_id: row.id,
    user_id: row.user_id,
    kind,
    title,
    body,
    data: { bot_id: target.bot_id, delivery_id: deliveryId },
  };
  await stores.events.append([
    {
      id: newId(),
      org_id: row.org_id,
      type: 'notification.created',
      data: JSON.stringify(event),
      created_at: now,
    },
  ]);
}
