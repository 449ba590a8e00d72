import type { DeliveryTarget, DueDelivery } from '../storage/stores/deliveries.js';
import type { Claimed } from './claim.js';
import { Endpoints, mayBorrow, OrgShares, roundOf, type Endpoint } from './slots.js';
import type { Throughput } from './throughput.js';

/**
 * The delivery worker's slots (worker.ts): which leased delivery starts its attempt when. It keeps, per
 * bot, the attempts running, answered (waiting to be recorded) and queued, and the slots reserved for
 * the fan-out, and counts them against the limits in all (Throughput), per endpoint and per
 * organization (slots.ts). A bot whose endpoint has a free slot but which waits for a slot in all or
 * for its organization's share is `blocked`, and served in turn when a slot frees (`dispatch`), first
 * the bots of organizations below their share. Starting an attempt is the worker's (`start`).
 *
 * Isolation (slot accounting in slots.ts): attempts in flight are bounded overall, per endpoint (the
 * webhook URL, whichever bots share it) and per organization, and neither a claim nor a hand-off
 * takes more of an endpoint's deliveries than its slots and one round of queue (which the lease
 * covers), so a receiver that hangs holds at most its own slots (each for at most the time-out) while
 * every other endpoint's deliveries keep flowing. An endpoint whose attempts time out gets half the
 * slots each time (down to 1; a delivery doubles them back) and no queue: what was leased for it
 * beyond that goes back to the table (worker.ts #shed). An organization keeps to its share
 * (WORKROOM_WEBHOOK_ORG_SHARE) of the attempts in flight and of the deliveries held while another one
 * is active or waiting: a slot that frees goes first to the bots of organizations below their share
 * (`dispatch`), and a claim takes the organizations in its look in turn, skipping those over their
 * share (their rows cannot fill the look). Alone, an organization may use every slot, but only
 * through endpoints that delivered and are not degraded (slots.ts `mayBorrow`), so one tenant's dead
 * receivers hold at most its share of the slots, from their first attempt on.
 * Leased deliveries count against the held rounds of WORKROOM_WEBHOOK_CONCURRENCY (throughput.ts).
 *
 */

export interface BotSlots {
  id: string;
  org: string;
  /**
   * The endpoint (webhook URL, slots.ts) whose slots the bot's attempts take, as it was when the bot
   * got work; a URL changed meanwhile counts from the bot's next time in the worker.
   */
  ep: Endpoint;
  /** Attempts sending now (a request to the bot's endpoint in flight). */
  running: number;
  /** Attempts answered, waiting to be recorded: they still count against the endpoint's round. */
  recording: number;
  /**
   * Leased, waiting for one of the endpoint's slots (or a slot in all): with the rest of the
   * endpoint's deliveries at most its round (slots.ts), which the lease covers, so that the next
   * attempts are at hand when slots free up without a claim for each.
   */
  queue: Claimed[];
  /** Slots promised to the fan-out for deliveries it is inserting. */
  reserved: number;
}

export interface DispatcherOptions {
  perEndpointConcurrency: number;
  orgShare: number;
  throughput: Throughput;
  /** Starts one attempt of this bot (the slot accounting is done: see `beginRun`). */
  start: (b: BotSlots, c: Claimed) => void;
  /** Shutting down: nothing more starts. */
  stopping: () => boolean;
}

/** A claim's answers, row by row (claim.ts `admit`), and what it learned. */
export interface Admission {
  admit: (d: DueDelivery, target: DeliveryTarget | undefined, severalOrgs: boolean) => boolean;
  /** A row was left for its organization's share. */
  readonly refusedForShare: boolean;
  /** The claim is over: the endpoints it looked up are let go of unless bots hold them. */
  done: () => void;
}

export class Dispatcher {
  readonly #o: DispatcherOptions;
  readonly #concurrency: number;
  /** Bots with deliveries in the worker (running, answered, queued or reserved). */
  readonly perBot = new Map<string, BotSlots>();
  /**
   * Running + queued + reserved, over all bots: at most `Throughput.holdMax`;
   * attempts running (`running`): at most WORKROOM_WEBHOOK_CONCURRENCY.
   */
  #held = 0;
  #running = 0;
  /** Slots per endpoint (webhook URL) and per organization (slots.ts). */
  readonly endpoints: Endpoints;
  readonly orgs: OrgShares;
  /**
   * Bots with leased deliveries and a free slot of their endpoint that wait for a slot in all or for
   * their organization's share; in the order they are served (a bot served goes to the end).
   */
  readonly #blocked = new Set<BotSlots>();
  /** Bots in #blocked per organization. */
  readonly #blockedOrgs = new Map<string, number>();
  /** Bots not in the worker whose rows a claim left because their endpoint was full (other bots'). */
  readonly #parked = new Map<string, Endpoint>();

  constructor(opts: DispatcherOptions) {
    this.#o = opts;
    this.#concurrency = opts.throughput.concurrency;
    this.endpoints = new Endpoints(opts.perEndpointConcurrency, opts.throughput.endpointRounds);
    this.orgs = new OrgShares(opts.orgShare, opts.throughput.concurrency, opts.throughput.holdMax);
  }

  get held(): number {
    return this.#held;
  }

  get running(): number {
    return this.#running;
  }

  slots(botId: string, org: string, target: Claimed['target']): BotSlots {
    let b = this.perBot.get(botId);
    if (!b) {
      const ep = this.endpoints.get(botId, target);
      b = { id: botId, org, ep, running: 0, recording: 0, queue: [], reserved: 0 };
      this.perBot.set(botId, b);
      ep.bots.add(botId);
    }
    return b;
  }

  /** Bots whose endpoints hold their round: a claim does not look at their rows. */
  busyBots(): string[] {
    const busy: string[] = [];
    for (const b of this.perBot.values()) if (b.ep.held >= roundOf(b.ep)) busy.push(b.id);
    for (const [id, ep] of this.#parked)
      if (ep.held >= roundOf(ep) && !this.perBot.has(id)) busy.push(id);
      else this.#parked.delete(id);
    return busy;
  }

  /**
   * Admits up to `free` rows of one claim: each within its endpoint's round and its organization's
   * share (counting the rows admitted before it in the same claim).
   */
  admission(free: number): Admission {
    let picked = 0;
    let refusedForShare = false;
    const touched = new Set<Endpoint>();
    const takenEp = new Map<Endpoint, number>();
    const takenOrg = new Map<string, number>();
    const admit = (d: DueDelivery, target: DeliveryTarget | undefined, several: boolean): boolean => {
      if (picked >= free) {
        this.orgs.want(d.org_id);
        return false;
      }
      const inWorker = this.perBot.get(d.bot_id);
      const ep = inWorker?.ep ?? this.endpoints.get(d.bot_id, target);
      touched.add(ep);
      if (ep.held + (takenEp.get(ep) ?? 0) >= roundOf(ep)) {
        // Another bot holds the endpoint's round: the next looks skip this bot while it is full.
        if (!inWorker && this.#parked.size < 10_000) this.#parked.set(d.bot_id, ep);
        return false;
      }
      if (!this.orgs.mayHold(d.org_id, takenOrg.get(d.org_id) ?? 0, mayBorrow(ep), several)) {
        this.orgs.want(d.org_id);
        refusedForShare = true;
        return false;
      }
      takenEp.set(ep, (takenEp.get(ep) ?? 0) + 1);
      takenOrg.set(d.org_id, (takenOrg.get(d.org_id) ?? 0) + 1);
      picked++;
      return true;
    };
    return {
      admit,
      // eslint-disable-next-line no-restricted-syntax -- one a claim (not per delivery): ~1 µs, not worth a class
      get refusedForShare() {
        return refusedForShare;
      },
      done: () => {
        for (const ep of touched) this.endpoints.release(ep);
      },
    };
  }

  /** Takes a slot for a delivery the fan-out is about to insert leased, if one is free (worker `reserve`). */
  reserve(target: DeliveryTarget): boolean {
    if (this.#held >= this.#o.throughput.holdMax) {
      this.orgs.want(target.org_id);
      return false;
    }
    const ep = this.perBot.get(target.bot_id)?.ep ?? this.endpoints.get(target.bot_id, target);
    if (ep.held >= roundOf(ep)) return false;
    if (!this.orgs.mayHold(target.org_id, 0, mayBorrow(ep), false)) {
      this.orgs.want(target.org_id);
      this.endpoints.release(ep);
      return false;
    }
    const b = this.slots(target.bot_id, target.org_id, target);
    b.reserved++;
    this.hold(b, 1);
    return true;
  }

  /** Gives back a slot taken by `reserve`. */
  unreserve(botId: string): void {
    const b = this.perBot.get(botId);
    if (!b || b.reserved === 0) return;
    b.reserved--;
    this.hold(b, -1);
    this.dropIfIdle(b);
  }

  /** Deliveries held (running, answered, leased, reserved): in all, per organization, per endpoint. */
  hold(b: BotSlots, n: number): void {
    this.#held += n;
    b.ep.held += n;
    this.orgs.addHeld(b.org, n);
  }

  dropIfIdle(b: BotSlots): void {
    if (b.running === 0 && b.recording === 0 && b.queue.length === 0 && b.reserved === 0) {
      this.perBot.delete(b.id);
      this.#unblock(b);
      b.ep.bots.delete(b.id);
      this.endpoints.release(b.ep);
    }
  }

  /** An attempt of this bot starts (`start` is called after this). */
  beginRun(b: BotSlots): void {
    b.running++;
    b.ep.running++;
    this.#running++;
    this.orgs.addRunning(b.org, 1);
  }

  /** An attempt of this bot is no longer sending (answered, or ended). */
  endRun(b: BotSlots): void {
    b.running--;
    b.ep.running--;
    this.#running--;
    this.orgs.addRunning(b.org, -1);
  }

  /** Shutdown: nobody waits for a slot any more. */
  clearBlocked(): void {
    this.#blocked.clear();
    this.#blockedOrgs.clear();
  }

  /**
   * Whether one more attempt of this bot may start, its endpoint having a free slot: a slot in all is
   * free, and its organization is below its share of them, or (through an endpoint that may borrow,
   * slots.ts) no other organization below its share waits for one.
   */
  #mayRun(b: BotSlots): boolean {
    if (this.#running >= this.#concurrency) return false;
    if (this.orgs.running(b.org) < this.orgs.runShare) return true;
    if (!mayBorrow(b.ep)) return false;
    const orgs = this.#blockedOrgs.size;
    if (orgs === 0 || (orgs === 1 && this.#blockedOrgs.has(b.org))) return true;
    for (const x of this.#blocked)
      if (x.org !== b.org && x.ep.running < x.ep.limit && this.orgs.running(x.org) < this.orgs.runShare)
        return false;
    return true;
  }

  /** Starts the bot's queued deliveries while its endpoint and the slots in all allow. */
  startNext(b: BotSlots): void {
    const { ep } = b;
    let started = false;
    while (b.queue.length > 0 && ep.running < ep.limit && !this.#o.stopping()) {
      if (!this.#mayRun(b)) {
        // Served when a slot in all frees up (dispatch), after those who waited before it.
        if (started) this.#unblock(b);
        this.#block(b);
        return;
      }
      started = true;
      const c = b.queue.shift()!;
      this.beginRun(b);
      this.#o.start(b, c);
    }
    this.#unblock(b);
    if (started && ep.bots.size > 1) {
      // The bots of a shared endpoint take turns.
      ep.bots.delete(b.id);
      ep.bots.add(b.id);
    }
  }

  #block(b: BotSlots): void {
    if (this.#blocked.has(b)) return;
    this.#blocked.add(b);
    this.#blockedOrgs.set(b.org, (this.#blockedOrgs.get(b.org) ?? 0) + 1);
  }

  #unblock(b: BotSlots): void {
    if (!this.#blocked.delete(b)) return;
    const n = this.#blockedOrgs.get(b.org)! - 1;
    if (n === 0) this.#blockedOrgs.delete(b.org);
    else this.#blockedOrgs.set(b.org, n);
  }

  /** A slot of `ep` is free (an attempt answered or ended): its bots' next deliveries, then the others'. */
  freed(ep: Endpoint): void {
    this.#startOn(ep);
    // The slot in all that this attempt frees may be another bot's turn.
    if (this.#running < this.#concurrency) this.#dispatch();
  }

  /** An endpoint's slot is free: its bots' next deliveries, in turn. */
  #startOn(ep: Endpoint): void {
    if (ep.bots.size === 1) {
      const b = this.perBot.get(ep.bots.values().next().value!);
      if (b && b.queue.length > 0) this.startNext(b);
      return;
    }
    for (const id of [...ep.bots]) {
      if (ep.running >= ep.limit) return;
      const b = this.perBot.get(id);
      if (b && b.queue.length > 0) this.startNext(b);
    }
  }

  /**
   * A slot in all is free: the bots that wait for one, first those of organizations below their
   * share, then the others (borrowing slots nobody below its share wants).
   */
  #dispatch(): void {
    const concurrency = this.#concurrency;
    if (this.#blocked.size === 0 || this.#running >= concurrency) return;
    const waiting = [...this.#blocked];
    let below = false;
    for (const org of this.#blockedOrgs.keys()) below ||= this.orgs.running(org) < this.orgs.runShare;
    if (below)
      for (const b of waiting) {
        if (this.#running >= concurrency) return;
        if (this.orgs.running(b.org) < this.orgs.runShare) this.startNext(b);
      }
    for (const b of waiting) {
      if (this.#running >= concurrency) return;
      this.startNext(b);
    }
  }
}
