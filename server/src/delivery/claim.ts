import type { Selectable } from 'kysely';
import type { DeliveryRow } from '../storage/schema.js';
import type { Storage } from '../storage/storage.js';
import type { DeliveryTarget, DueDelivery } from '../storage/stores/deliveries.js';

/**
 * The claim stage of the delivery worker (claim → attempt → record, worker.ts): a look at the due rows
 * in, the leased deliveries with what sending them needs out (`Claimed`), in one transaction (SKIP LOCKED
 * on PostgreSQL). Which rows may be taken is the worker's slot accounting (slots.ts), asked row by row
 * through `admit`; this stage decides the order it asks in: earliest due first, outbox order among rows
 * due at the same moment, and the organizations of the look in turn, one row each per turn (so a claim
 * never leases a round of one organization's rows ahead of another's).
 */

/** A leased delivery with what sending it needs: the input of the attempt stage. */
export interface Claimed {
  row: Selectable<DeliveryRow>;
  /** The event's data as JSON text. */
  data: string;
  target: DeliveryTarget | undefined;
}

export interface ClaimRequest {
  now: string;
  /** The end of the leases taken. */
  leaseUntil: string;
  /** Due rows to look at, at most. */
  scan: number;
  /** Bots and organizations whose rows are not looked at (their endpoints or shares are full). */
  busyBots: string[];
  busyOrgs: string[];
  /** Rows this worker holds already (never claimed twice). */
  held: (deliveryId: string) => boolean;
  /** Whether this row may be leased now; asked in the order rows are taken. */
  admit: (d: DueDelivery, target: DeliveryTarget | undefined, severalOrgs: boolean) => boolean;
  /** Starts measuring the transaction's cost to the event loop (Throughput.measureLoop). */
  measure: () => () => void;
}

export interface ClaimResult {
  /** Leased, in outbox order. */
  claimed: Claimed[];
  /** Due rows the look saw: fewer than `scan` means it saw them all. */
  scanned: number;
  /** Bots with fresh (never attempted) rows the look left due. */
  skipped: Set<string>;
}

export async function claimDue(storage: Storage, req: ClaimRequest): Promise<ClaimResult> {
  const skipped = new Set<string>();
  let scanned = 0;
  const claimed = await storage.transaction(async (stores) => {
    const measured = req.measure();
    const due = await stores.deliveries.due({
      now: req.now,
      limit: req.scan,
      busyBots: req.busyBots,
      busyOrgs: req.busyOrgs,
    });
    scanned = due.length;
    // Outbox order among rows due at the same moment (a fan-out pass inserts them with one time).
    const candidates = due
      .filter((d) => !req.held(d.id))
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
    // Bots whose owner set max_per_minute: one row per claim, then held for 60 s / max (durable, so a
    // restart or another instance keeps the pace; the hold is written in this claim's transaction).
    const paced = new Map<string, number>();
    // Organizations take turns, one row each per turn (each organization's rows in time order).
    const byOrg = new Map<string, DueDelivery[]>();
    for (const d of candidates) {
      const list = byOrg.get(d.org_id);
      if (list) list.push(d);
      else byOrg.set(d.org_id, [d]);
    }
    const several = byOrg.size > 1;
    const lists = [...byOrg.values()];
    const next = lists.map(() => 0);
    for (let turn = true; turn;) {
      turn = false;
      lists.forEach((list, i) => {
        while (next[i]! < list.length) {
          const d = list[next[i]!++]!;
          const target = targets.get(d.bot_id);
          const max = target?.max_per_minute ?? null;
          if (max !== null && paced.has(d.bot_id)) {
            if (d.attempts === 0) skipped.add(d.bot_id);
            continue;
          }
          if (req.admit(d, target, several)) {
            picked.push(d.id);
            if (max !== null) paced.set(d.bot_id, max);
            turn = true;
            break;
          }
          if (d.attempts === 0) skipped.add(d.bot_id);
        }
      });
    }
    const leased = await stores.deliveries.lease(picked, req.now, req.leaseUntil);
    const nowMs = Date.parse(req.now);
    for (const [botId, max] of paced) {
      const until = new Date(nowMs + Math.ceil(60_000 / max)).toISOString();
      await stores.deliveries.hold(botId, until, `max_per_minute ${max}`, req.now);
    }
    // Outbox order within the batch (rows due at the same moment come from one fan-out pass).
    leased.sort((a, b) => (a.row.event_position ?? 0) - (b.row.event_position ?? 0));
    measured();
    return leased.map(({ row, data }) => ({ row, data, target: targets.get(row.bot_id) }));
  });
  return { claimed, scanned, skipped };
}

/**
 * Due deliveries waiting in the table, as far as this worker knows (worker.ts "Order"): per bot, those
 * the fan-out inserted due and no claim has leased yet (it may dip below 0 for a moment: a claim can
 * lease rows before the fan-out's post-commit step counts them); the bots whose fresh rows the last
 * complete look at the due rows had to leave; and `unknown`: the due rows were more than one look, any
 * bot may have some.
 */
export class DueBook {
  readonly #waiting = new Map<string, number>();
  #skipped = new Set<string>();
  #unknown = true;

  /** `n` fresh rows of this bot are due in the table (negative: leased). */
  count(botId: string, n: number): void {
    const left = (this.#waiting.get(botId) ?? 0) + n;
    if (left === 0) this.#waiting.delete(botId);
    else this.#waiting.set(botId, left);
  }

  /** What a claim saw: a complete look (`exhausted`) knows which bots still have fresh rows due. */
  looked(exhausted: boolean, skipped: Set<string>): void {
    // Those of busy bots, not looked at, are counted; an incomplete look knows nothing.
    this.#unknown = !exhausted;
    if (exhausted) this.#skipped = skipped;
  }

  /** Rows were made due behind the fan-out's back (a socket connected): nothing is known until the next look. */
  forget(): void {
    this.#unknown = true;
  }

  /** Whether a new delivery of this bot may be handed over without overtaking one due in the table. */
  mayHandOver(botId: string): boolean {
    return !this.#unknown && (this.#waiting.get(botId) ?? 0) <= 0 && !this.#skipped.has(botId);
  }

  /**
   * Whether due rows this worker knows of may be waiting: rows the fan-out left due (counted per bot),
   * bots whose fresh rows the last complete look left, or a look that did not see them all. Retries,
   * redeliveries and resumed webhooks wake the worker themselves (or its due timer, or the poll).
   */
  mayHaveDue(): boolean {
    if (this.#unknown || this.#skipped.size > 0) return true;
    for (const n of this.#waiting.values()) if (n > 0) return true;
    return false;
  }
}

/** When the earliest pending delivery is due (epoch ms), if any: the worker's due timer. */
export async function earliestDue(storage: Storage): Promise<number | undefined> {
  // A held endpoint's rows are due when its hold ends (a receiver's Retry-After, a max_per_minute pace);
  // a paused one's, never (its resume wakes the worker).
  const next = await storage.stores.db
    .selectFrom('webhook_deliveries as d')
    .leftJoin('webhook_health as h', 'h.bot_id', 'd.bot_id')
    .select((eb) =>
      eb.fn
        .min(
          eb
            .case()
            .when('h.hold_until', '>', eb.ref('d.next_attempt_at'))
            .then(eb.ref('h.hold_until'))
            .else(eb.ref('d.next_attempt_at'))
            .end(),
        )
        .as('at'),
    )
    .where('d.state', '=', 'pending')
    .where('h.paused_at', 'is', null)
    .executeTakeFirst();
  const at = next?.at ? Date.parse(next.at) : NaN;
  return Number.isNaN(at) ? undefined : at;
}
