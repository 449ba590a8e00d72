import type { Config } from '../config/config.js';
import { Pacer } from './pacer.js';

/**
 * The delivery worker's throughput tuning in one place (worker.ts): how many deliveries it holds, how
 * large and how frequent its claims are, how many record batches it writes at once and how large, and
 * the pacing of its work on the event loop while requests are served (pacer.ts). The isolation between
 * endpoints and organizations (slots.ts) takes its limits from here (`holdMax`). None of this changes
 * what is delivered or in which order; only how fast.
 */

/**
 * Deliveries this worker holds (running, waiting leased in memory, reserved), in all: this many times
 * WORKROOM_WEBHOOK_CONCURRENCY. On PostgreSQL several rounds wait, and a claim waits until a round is
 * free, so that attempts go on while the next claim is in flight (a claim takes tens of milliseconds
 * there under load: with one round of queue the attempts ran dry before it came back, and a backlog
 * went out at ~1,800/s with half the event loop idle). On SQLite a claim is quick but runs on the event
 * loop: one round of queue and small claims as soon as an eighth of a round is free (larger ones cost
 * it a third of its deliveries a second). Per endpoint it stays a few rounds of its own limit (ENDPOINT_ROUNDS).
 */
const HELD_ROUNDS = { postgres: 8, sqlite: 2 };
/**
 * Rounds of its own limit (WORKROOM_WEBHOOK_CONCURRENCY_PER_ENDPOINT) a healthy endpoint may hold
 * (slots.ts `roundOf`). A delivery counts from its lease or hand-off until its attempt is recorded, so
 * the round covers the attempts running, those answered and waiting for their record, and a queue. On
 * PostgreSQL a record batch takes a round trip (tens of milliseconds under load): with two rounds, one
 * busy bot's endpoint spent half its round waiting for records, the fan-out could not hand it new
 * deliveries, and its claims took ~7 rows each: at 200 events/s to one bot (bench/webhook-fanout.ts,
 * latency phase) it fell behind by 0.8-2.2 s and never caught up; with four, p50 45-57 ms. SQLite
 * records at once: two.
 */
const ENDPOINT_ROUNDS = { postgres: 4, sqlite: 2 };
/**
 * PostgreSQL: record batches written at once. An attempt holds its bot's slot until recorded; with one
 * batch at a time, attempts that ended during a write waited for it and the next (tens of milliseconds
 * under load), and the slots sat idle. SQLite: one (its writes take turns anyway).
 */
const RECORD_LANES = 3;
/** Due rows a claim looks at, at most (earliest first). */
const SCAN_MAX = 1000;
/** Claims after attempts end come at most this often (ms). */
const CLAIM_EVERY_MS = 2;
/** Finished attempts recorded per transaction, at most. */
const RECORD_BATCH = 500;

export class Throughput {
  readonly pacer: Pacer;
  /** SQLite: transactions run on the event loop (see Pacer.measure). */
  readonly sync: boolean;
  /** Attempts in flight at most (WORKROOM_WEBHOOK_CONCURRENCY). */
  readonly concurrency: number;
  /** Deliveries held (running, answered, leased, reserved) at most, in all (HELD_ROUNDS). */
  readonly holdMax: number;
  /** Rounds of its limit a healthy endpoint may hold (ENDPOINT_ROUNDS). */
  readonly endpointRounds: number;
  /** Record batches written at once. */
  readonly recordLanes: number;
  readonly recordBatch = RECORD_BATCH;
  readonly claimEveryMs = CLAIM_EVERY_MS;

  constructor(webhooks: Config['webhooks'], runsOnEventLoop: boolean, pacer?: Pacer) {
    this.pacer = pacer ?? new Pacer();
    this.sync = runsOnEventLoop;
    this.concurrency = webhooks.concurrency;
    this.holdMax = (this.sync ? HELD_ROUNDS.sqlite : HELD_ROUNDS.postgres) * webhooks.concurrency;
    this.endpointRounds = this.sync ? ENDPOINT_ROUNDS.sqlite : ENDPOINT_ROUNDS.postgres;
    this.recordLanes = this.sync ? 1 : RECORD_LANES;
  }

  /**
   * Free holds below which a claim is not worth it: claims come in batches, so with most slots taken
   * it waits until enough are free (attempts ending wake it); on PostgreSQL the rounds still held keep
   * the attempts going meanwhile.
   */
  claimWorth(held: number): number {
    if (held === 0) return 1;
    return this.sync ? Math.max(1, Math.floor(this.concurrency / 8)) : this.concurrency;
  }

  /** Due rows a claim for `free` holds looks at. */
  scanSize(free: number): number {
    return Math.min(SCAN_MAX, Math.max(64, free * 4));
  }

  /**
   * Starts measuring a transaction's cost to the event loop; call the result when it ends. On SQLite the
   * whole transaction keeps the loop (and the writer) busy; on PostgreSQL it waits for the database, so
   * nothing is charged.
   */
  measureLoop(): () => void {
    return this.sync ? this.pacer.measure() : () => undefined;
  }
}
