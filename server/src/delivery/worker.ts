import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { systemClock, type Clock, type ClockTimer } from '../runtime/clock.js';
import type { Storage } from '../storage/storage.js';
import type { DeliveryTarget } from '../storage/stores/deliveries.js';
import { Attempter, outcomeOf } from './attempt.js';
import { claimDue, DueBook, earliestDue, type Claimed } from './claim.js';
import { Dispatcher, type BotSlots } from './dispatch.js';
import type { InProcessReceiver } from './in-process.js';
import type { OutboundClient } from '../outbound/client.js';
import type { Pacer } from './pacer.js';
import { handBack, Recorder, wakeWaiting } from './record.js';
import type { SocketTransport } from './socket.js';
import { roundOf, type Endpoint } from './slots.js';
import { Throughput } from './throughput.js';
import type { MetricsHooks } from '../metrics/hooks.js';

export type { Claimed } from './claim.js';

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
 * The stages, each a unit with explicit inputs and outputs:
 *  - **claim** (claim.ts): a look at the due rows → the leased deliveries (`Claimed`);
 *  - **attempt** (attempt.ts): a `Claimed` → an `AttemptResult` (the POST, or a built-in bot's handler);
 *  - **record** (record.ts): finished attempts → each delivery's next state, in batches.
 * Between them, the slots (dispatch.ts, over slots.ts) decide which leased delivery starts when, and
 * the throughput tuning (throughput.ts: hold limit, claim and record batch sizes, record lanes,
 * pacing) how much the worker takes at once. This class wires them together and keeps what ties them:
 * the deliveries it holds, what may still be due, the timers and the shutdown.
 *
 * Isolation: attempts in flight are bounded overall, per endpoint and per organization (dispatch.ts);
 * an endpoint whose attempts time out gets fewer slots and what was leased for it beyond its round goes
 * back to the table (#shed).
 *
 * Built-in bots are delivered in process (attempt.ts), one delivery at a time per bot.
 *
 * Time: when a delivery is due (its retries, their back-off, Retry-After), its lease, the attempt's
 * `started_at` and `webhook-timestamp`, the endpoint's failure count and pause, retention, and the
 * timers that look for due work (the poll, the earliest retry, pruning) go by `clock` (runtime/clock.ts):
 * a test clock moved 5 minutes on makes a retry due and fires the poll at once. How long work takes
 * (the time-out of an in-process attempt, throughput pacing, the claim spacing, the second before a
 * failed record write is tried again, the shutdown deadline) is not business time and stays on
 * Node's timers and `performance.now()`.
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
  /** During a key rotation, the previous key (secrets under it are still read). */
  previousEncryptionKeys?: readonly Buffer[];
  client: OutboundClient;
  /** Fallback poll for due retries and work of other instances. */
  pollMs?: number;
  /** Receives the deliveries of built-in bots; without it they are not sent (they fail, final). */
  inProcess?: InProcessReceiver;
  /** Bots' sockets on this instance (socket.ts, docs/SOCKET.md); without it, HTTP only. */
  socket?: SocketTransport;
  /** The sockets' lease, attempt budget and wait; default: the configuration's defaults. */
  sockets?: Config['sockets'];
  /** Paces background work while requests are served (delivery/pacer.ts). */
  pacer?: Pacer;
  /** Business time (see "Time" above); default: the system clock. */
  clock?: Clock;
  /** Counts attempts by outcome and their duration (docs/METRICS.md). */
  metrics?: MetricsHooks;
  /** Whether this instance does the singleton work (pruning; scheduler/leader.ts); default: yes. */
  isLeader?: () => boolean;
}

const DEFAULT_SOCKETS: Config['sockets'] = {
  leaseMs: 300_000,
  heartbeatMs: 25_000,
  perBot: 10,
  maxAttempts: 20,
  waitMs: 86_400_000,
};

export class DeliveryWorker {
  readonly #o: WorkerOptions;
  /** Hold limits, claim and record batch sizes, pacing (throughput.ts). */
  readonly #t: Throughput;
  /** The stages after the claim (attempt.ts, record.ts). */
  readonly #attempter: Attempter;
  readonly #recorder: Recorder;
  readonly #pollMs: number;
  readonly #leaseMs: number;
  /** Slots: which leased delivery starts when (dispatch.ts). */
  readonly #d: Dispatcher;
  /** The last look was full and left rows for their organization's share (see #claimOnce). */
  #strictLook = false;
  /** Deliveries leased by this worker and not yet recorded or handed back: never claimed twice. */
  readonly #heldIds = new Set<string>();
  /** What may be due in the table (claim.ts). */
  readonly #due = new DueBook();
  readonly #active = new Set<Promise<void>>();
  readonly #abort = new AbortController();
  #claiming: Promise<void> | undefined;
  #again = false;
  readonly #clock: Clock;
  #timer: ClockTimer | undefined;
  #dueTimer: ClockTimer | undefined;
  #pruneTimer: ClockTimer | undefined;
  #stopping = false;
  #soon = false;
  #lastClaim = -Infinity;
  #draining: Promise<void> | undefined;
  /** Attempts cut off by shutdown: their deliveries are handed back, nothing is recorded. */
  readonly #cancelled: string[] = [];

  constructor(opts: WorkerOptions) {
    this.#o = opts;
    this.#t = new Throughput(opts.webhooks, opts.storage.runsOnEventLoop, opts.pacer);
    this.#clock = opts.clock ?? systemClock;
    this.#pollMs = opts.pollMs ?? 500;
    // Every attempt in flight listens on the one shutdown signal (up to WORKROOM_WEBHOOK_CONCURRENCY).
    setMaxListeners(0, this.#abort.signal);
    // Long enough that a live worker always records before its lease runs out: the time-out, plus
    // the wait of a delivery queued behind its bot's other slots or the slots in all (one round of
    // queue: at most one time-out each), plus slack.
    this.#leaseMs = 3 * opts.webhooks.timeoutMs + 5_000;
    this.#d = new Dispatcher({
      perEndpointConcurrency: opts.webhooks.perEndpointConcurrency,
      orgShare: opts.webhooks.orgShare,
      throughput: this.#t,
      start: (b, c) => this.#run(b, c),
      stopping: () => this.#stopping,
    });
    this.#attempter = new Attempter({
      webhooks: opts.webhooks,
      encryptionKey: opts.encryptionKey,
      previousEncryptionKeys: opts.previousEncryptionKeys ?? [],
      client: opts.client,
      inProcess: opts.inProcess,
      socket: opts.socket,
      clock: this.#clock,
      pacer: this.#t.pacer,
      signal: this.#abort.signal,
    });
    this.#recorder = new Recorder({
      storage: opts.storage,
      log: opts.log,
      webhooks: opts.webhooks,
      sockets: opts.sockets ?? DEFAULT_SOCKETS,
      clock: this.#clock,
      throughput: this.#t,
      stopping: () => this.#stopping,
      released: (id) => this.#heldIds.delete(id),
    });
  }

  start(): void {
    this.#timer = this.#clock.setInterval(() => this.wake(), this.#pollMs);
    const pruneEvery = Math.min(60_000, Math.max(1000, this.#o.webhooks.retentionMs / 10));
    this.#pruneTimer = this.#clock.setInterval(() => {
      if (this.#o.isLeader?.() ?? true) void this.prune(); // once for all instances
    }, pruneEvery);
    this.wake();
  }

  /** The business clock this worker (and the fan-out that feeds it) goes by. */
  get clock(): Clock {
    return this.#clock;
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
    return new Date(this.#clock.now() + this.#leaseMs).toISOString();
  }

  /**
   * Takes a slot for a delivery of this bot that the fan-out is about to insert (leased), if one is
   * free now and handing over keeps the bot's order; `false`: insert it as due, to be claimed.
   */
  reserve(target: DeliveryTarget & { paused: boolean }): boolean {
    if (this.#stopping || target.paused || !this.#due.mayHandOver(target.bot_id)) return false;
    // A held endpoint (Retry-After) or a paced one (max_per_minute) is served by claims only.
    if (target.max_per_minute != null) return false;
    if (target.hold_until != null && target.hold_until > this.#clock.nowIso()) return false;
    // Not paced here: a delivery handed over starts at once and is charged; the next pass waits for it.
    return this.#d.reserve(target);
  }

  /** Gives back a slot taken by `reserve` (the fan-out's transaction failed, or the row existed). */
  unreserve(botId: string): void {
    this.#d.unreserve(botId);
  }

  /** The reserved deliveries, committed: sends them. */
  handOff(items: Claimed[]): void {
    for (const c of items) {
      const b = this.#d.perBot.get(c.row.bot_id);
      if (!b || b.reserved === 0) continue; // not reserved: cannot happen
      b.reserved--;
      this.#heldIds.add(c.row.id);
      b.queue.push(c);
      this.#d.startNext(b);
    }
  }

  /** The fan-out inserted `n` due (not handed over) deliveries of this bot: they go first. */
  noteBacklog(botId: string, n = 1): void {
    this.#due.count(botId, n);
  }

  /**
   * One of the bot's sockets connected to this instance: its deliveries waiting for a socket are due
   * now (in outbox order), and the fan-out hands nothing over until a claim has looked at them.
   */
  async socketConnected(botId: string): Promise<void> {
    if (this.#stopping) return;
    try {
      if ((await wakeWaiting(this.#o.storage, botId)) > 0) this.#due.forget();
    } catch (err) {
      this.#o.log.warn({ err, botId }, 'could not wake the deliveries waiting for a socket');
    }
    this.wake();
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
    const wait = this.#lastClaim + this.#t.claimEveryMs - performance.now();
    const go = () => {
      this.#soon = false;
      this.wake();
    };
    if (wait > 0) setTimeout(go, wait);
    else setImmediate(go);
  }

  async #claimLoop(): Promise<void> {
    // Claims come in batches: with most slots taken, wait until enough are free (throughput.ts).
    const worthIt = this.#t.claimWorth(this.#d.held);
    let exhausted = false;
    do {
      this.#again = false;
      for (;;) {
        const free = this.#t.holdMax - this.#d.held;
        if (free < worthIt || this.#stopping) return;
        await this.#t.pacer.ready();
        if (this.#stopping) return;
        const r = await this.#claimOnce(this.#t.holdMax - this.#d.held);
        exhausted = r.exhausted;
        // A look that leased nothing (its rows wait for their endpoints or their organization's
        // share): the next claim comes when an attempt ends, not at once again.
        if (exhausted || r.leased === 0) break;
      }
    } while (this.#again && !this.#stopping);
    if (exhausted) await this.#armDueTimer();
  }

  async #claimOnce(free: number): Promise<{ exhausted: boolean; leased: number }> {
    this.#lastClaim = performance.now();
    const scan = this.#t.scanSize(free);
    const nowMs = this.#clock.now();
    const admission = this.#d.admission(free);
    const { claimed, scanned, skipped } = await claimDue(this.#o.storage, {
      now: new Date(nowMs).toISOString(),
      leaseUntil: new Date(nowMs + this.#leaseMs).toISOString(),
      scan,
      busyBots: this.#d.busyBots(),
      // Organizations at their share while others are about (or, after a full look that left rows for
      // their share, at all): their rows are not looked at, so that they cannot fill the look and hide
      // the others' rows.
      busyOrgs: this.#d.orgs.overShare(this.#strictLook),
      held: (id) => this.#heldIds.has(id),
      admit: admission.admit,
      measure: () => this.#t.measureLoop(),
    });
    for (const c of claimed) {
      // Fresh rows (never attempted) are the ones the fan-out left due and counted.
      if (c.row.attempts === 0 && c.row.event_seq !== null) this.#due.count(c.row.bot_id, -1);
      this.#enqueue(c);
    }
    admission.done();
    const exhausted = scanned < scan;
    this.#strictLook = !exhausted && admission.refusedForShare;
    this.#due.looked(exhausted, skipped);
    return { exhausted, leased: claimed.length };
  }

  /** Sleeps until the earliest future retry (the poll is the fallback). */
  async #armDueTimer(): Promise<void> {
    if (this.#stopping) return;
    const at = await earliestDue(this.#o.storage);
    if (at === undefined) return;
    const wait = at - this.#clock.now();
    if (wait <= 0 || wait >= this.#pollMs) return;
    this.#clock.clearTimeout(this.#dueTimer);
    this.#dueTimer = this.#clock.setTimeout(() => this.wake(), wait + 1);
  }

  #enqueue(c: Claimed): void {
    const b = this.#d.slots(c.row.bot_id, c.row.org_id, c.target);
    this.#d.hold(b, 1);
    this.#heldIds.add(c.row.id);
    b.queue.push(c);
    this.#d.startNext(b);
  }

  #run(b: BotSlots, c: Claimed): void {
    const { ep } = b;
    // The endpoint's slot frees when the answer is in; the attempt counts against the endpoint's
    // round (and WORKROOM_WEBHOOK_CONCURRENCY's leases) until it is recorded.
    let sending = true;
    const endSending = () => {
      sending = false;
      this.#d.endRun(b);
    };
    const answered = () => {
      if (!sending) return;
      endSending();
      b.recording++;
      this.#d.freed(ep);
    };
    let delivered = false;
    const p = this.#attempt(c, ep, answered)
      .then((ok) => {
        delivered = ok;
      })
      .catch((err: unknown) => this.#o.log.error({ err, delivery: c.row.id }, 'webhook attempt failed'))
      .finally(() => {
        this.#active.delete(p);
        if (sending) endSending();
        else b.recording--;
        this.#d.hold(b, -1);
        this.#d.dropIfIdle(b);
        this.#d.freed(ep);
        // A claim now only if one may find something: rows left due (counted, or not all seen), or
        // this attempt failed (its retry is due later: the claim that finds nothing arms the timer).
        if (!delivered || this.#due.mayHaveDue()) this.#wakeSoon();
      });
    this.#active.add(p);
  }

  /**
   * An endpoint got fewer slots: the deliveries leased for it beyond its round (its bots' latest) go
   * back to the table, due since their event's time (so still before their bots' later rows), instead
   * of holding the worker's slots while they wait for a receiver that does not answer.
   */
  #shed(ep: Endpoint): void {
    const back: Claimed[] = [];
    for (const id of ep.bots) {
      const b = this.#d.perBot.get(id);
      while (b && b.queue.length > 0 && ep.held > roundOf(ep)) {
        const c = b.queue.pop()!;
        this.#d.hold(b, -1);
        back.push(c);
        // Fresh rows due in the table are counted (see "Order"): the fan-out then keeps the bot's order.
        if (c.row.attempts === 0 && c.row.event_seq !== null) this.#due.count(id, 1);
      }
      if (b) this.#d.dropIfIdle(b);
    }
    if (back.length === 0) return;
    void this.#release(
      back.map((c) => c.row.id),
      true,
    ).then(() => this.#wakeSoon());
  }

  // --- attempts ---

  /** One attempt: sends, calls `answered` once the endpoint is done with it, then records it; true if delivered. */
  async #attempt(c: Claimed, ep: Endpoint, answered: () => void): Promise<boolean> {
    const startedAt = this.#clock.nowIso();
    // A socket attempt frees its endpoint's sending slot once its frame is written: the wait for the
    // bot's ack holds only the delivery (its bot's round, the worker's hold limit), not a slot of
    // WORKROOM_WEBHOOK_CONCURRENCY, which bounds requests in flight (docs/SOCKET.md, "Ordering").
    const result = await this.#attempter.attempt(c, answered);
    this.#o.metrics?.webhookAttempt(
      outcomeOf(result),
      result.via ?? (c.target?.builtin ? 'in_process' : 'http'),
      result.durationMs / 1000,
    );
    if (result.cancelled) {
      this.#cancelled.push(c.row.id); // handed back by the drain that cancelled it
      return false;
    }
    // Svix-style back-off (slots.ts): a time-out halves the endpoint's slots, a delivery restores them.
    if (result.timedOut) {
      this.#d.endpoints.timedOut(ep);
      this.#shed(ep);
    } else if (result.ok) this.#d.endpoints.delivered(ep);
    answered();
    // The attempt counts against its bot's round until it is recorded: a crash then resends at most
    // one round of each bot's deliveries (slots.ts `roundOf`), never a growing heap of unrecorded ones.
    await new Promise<void>((recorded) =>
      this.#recorder.push({ c, attempt: c.row.attempts + 1, startedAt, result, recorded }),
    );
    // Recorded as waiting for a socket while one of the bot's sockets connected: that socket's wake-up
    // may have come before this record, so the row is woken now (else it would wait for its next look).
    if (result.socket === 'waiting' && this.#o.socket?.connected(c.row.bot_id))
      void this.socketConnected(c.row.bot_id);
    return result.ok === true;
  }

  /**
   * Makes leased deliveries due again now (shutdown, cancelled attempts); `inOrder`: due since their
   * event's time, so that a claim takes them before their bots' later rows (#shed).
   */
  async #release(ids: string[], inOrder = false): Promise<void> {
    if (ids.length === 0) return;
    try {
      await handBack(this.#o.storage, ids, this.#clock.nowIso(), inOrder);
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
    this.#clock.clearTimeout(this.#timer);
    this.#clock.clearTimeout(this.#pruneTimer);
    this.#clock.clearTimeout(this.#dueTimer);
    await this.#claiming;
    const queued: Claimed[] = [];
    for (const b of this.#d.perBot.values()) {
      this.#d.hold(b, -b.queue.length);
      queued.push(...b.queue.splice(0));
    }
    this.#d.clearBlocked();
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
    this.#recorder.stopRetrying();
    void this.#recorder.flush();
    await Promise.allSettled([...this.#active]);
    await this.#release([...queued.map((c) => c.row.id), ...this.#cancelled.splice(0)]);
    await this.#recorder.settled();
    await this.#recorder.flush();
  }

  /** After `drain` (waits for it to end), or at once. */
  async stop(): Promise<void> {
    await this.drain(Date.now());
  }

  /** Deletes delivered and failed deliveries older than the retention, a batch at a time. */
  async prune(): Promise<number> {
    const before = new Date(this.#clock.now() - this.#o.webhooks.retentionMs).toISOString();
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
