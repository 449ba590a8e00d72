import type { Selectable } from 'kysely';
import type { Logger } from 'pino';
import { FANOUT_ROUTES } from '../domain/events.js';
import { newId } from '../domain/ids.js';
import type { OutboxEvent, OutboxReader } from '../events/outbox-reader.js';
import type { DeliveryRow } from '../storage/schema.js';
import type { Storage } from '../storage/storage.js';
import {
  MAX_ROWS_IF_CURSOR_AT,
  type NewDelivery,
  type ReceivingBot,
  type Subscriber,
} from '../storage/stores/deliveries.js';
import type { Stores } from '../storage/stores/index.js';
import { Pacer } from './pacer.js';
import type { Claimed, DeliveryWorker } from './worker.js';

/**
 * Fan-out: outbox → one `webhook_deliveries` row per bot that should receive the event. It reads the
 * outbox by position (events/outbox-reader.ts) from a durable cursor, and inserts the deliveries and
 * moves the cursor in ONE transaction: after a crash it resumes exactly where it stopped, and an event
 * is never fanned out twice (the (event, bot) pair is unique as well, for instances racing on PostgreSQL,
 * where the cursor row is also locked for the transaction).
 *
 * Who receives what (docs/WEBHOOKS.md "Who receives which events"); the route of each type is the event
 * catalogue's (FANOUT_ROUTES in domain/events.ts, derived from its lists), never a list here:
 *  - a bot receives the types in its `events` list, only from containers it reaches when the event is
 *    fanned out: a channel it is a member of, a topic of a project it is a member of, a DM room it is
 *    part of; only in its own organization; only while it is active and has a webhook URL (or is a
 *    built-in bot and the worker delivers in process);
 *  - member.joined / member.left also reach the bot that joined or left (if subscribed);
 *  - command.invoked is not fanned out: commands.execute sends it to its bot at once and tells the user
 *    the outcome (operations/commands/dispatch.ts); a second delivery would run the command twice.
 *    resources.changed never leaves the server;
 *  - action.invoked (a click on a message's button or select) goes to the bot named in `data.bot_id`
 *    only, the bot that sent the message, without a subscription, while it still reaches the container;
 *  - job.due (a job the bot scheduled is due, docs/SCHEDULER.md) goes to the bot in `data.bot_id` only,
 *    without a subscription and without a container;
 *  - a bot does not receive message.* events of its own actions (its own message, edit, deletion): a bot
 *    that answers every message would otherwise answer itself forever;
 *  - loop guard: bot-to-bot ping-pong is cut by a per (bot, container) budget of messages written by
 *    bots (LOOP_BUDGET per minute); deliveries over it are recorded as failed with the reason, visibly.
 *
 * Cost (docs/WEBHOOKS.md "Performance"): one transaction per batch of events (up to BATCH events, cut
 * after MAX_ROWS rows, fewer while requests are being served), with one query for the bots of the
 * batch's organizations, one per container kind for the bot members of all its containers, one for the
 * projects of its topics, and the rows inserted without building a query per row. A delivery the worker
 * has a free slot for is inserted already leased and handed to it after the commit (worker.ts
 * "hand-off"): no claim and no wait for a poll between the event and its first attempt.
 */

export const FANOUT_CURSOR = 'webhook-fanout';
const BATCH = 500;
/** Events one pass reads while background work is paced (most would not fit in MAX_ROWS_BUSY). */
const BATCH_BUSY = 50;
/** Rows one pass inserts at most (then the cursor stops after the event that reached it). */
const MAX_ROWS = 2000;
/** The same while background work is paced (requests queue up): a shorter hold of the (SQLite) writer. */
const MAX_ROWS_BUSY = 250;
/** See #pass: what a delivery row costs beyond its insert (ms). */
const ROW_AFTERCOST_MS = 0.015;
const LOOP_BUDGET = 60;
const LOOP_WINDOW_MS = 60_000;

type Container = { kind: 'channel' | 'project' | 'dm_room'; id: string };
/** A pass's rows, in event order, up to `upTo`: see #plan. */
interface Plan {
  rows: NewDelivery[];
  handOff: Claimed[];
  due: NewDelivery[];
  upTo: number;
}
/** The loop window's lists as they were before a pass changed them (undefined: there was none). */
type LoopJournal = Map<string, number[] | undefined>;
interface Candidate {
  id: string;
  events: ReadonlySet<string>;
  builtin: string | null;
}

export class Fanout {
  #unsubscribe: (() => void) | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  #retry: NodeJS.Timeout | undefined;
  /** The cursor row exists (it is created once, then only moved). */
  #cursorRow = false;
  /**
   * PostgreSQL: the cursor's position as this instance last read or set it (undefined: read it again).
   * See #passUnlocked.
   */
  #cursor: number | undefined;
  /** Parsed `events` lists of bots, by their JSON text (the same few texts come back every batch). */
  readonly #parsed = new Map<string, ReadonlySet<string>>();
  /** Recent bot-authored messages delivered per `${bot}:${container}` (event times, ms). */
  readonly #loopWindow = new Map<string, number[]>();

  constructor(
    private readonly storage: Storage,
    private readonly reader: OutboxReader,
    private readonly log: Logger,
    private readonly worker: DeliveryWorker,
    private readonly pacer: Pacer = new Pacer(),
  ) {}

  start(): void {
    this.#stopped = false;
    this.#cursor = undefined;
    this.#unsubscribe = this.reader.onWake(() => void this.pump());
    void this.pump();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe?.();
    clearTimeout(this.#retry);
    await this.#running;
  }

  /** Fans out everything readable; concurrent calls coalesce into one more pass. */
  pump(): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      try {
        do {
          this.#again = false;
          while (!this.#stopped) {
            await this.pacer.ready();
            if (this.#stopped || !(await this.#pass())) break;
          }
        } while (this.#again && !this.#stopped);
      } catch (err) {
        this.log.error({ err }, 'webhook fan-out failed; retrying');
        if (!this.#stopped) this.#retry = setTimeout(() => void this.pump(), 1000).unref();
      } finally {
        this.#running = undefined;
      }
    })();
    return this.#running;
  }

  /** One batch; true when there may be more to read. */
  #pass(): Promise<boolean> {
    return this.reader.usesSequencer ? this.#passUnlocked() : this.#passLocked();
  }

  /**
   * One batch on PostgreSQL, without a transaction (issue 18, point 7: fewer round trips per message
   * event): the events after the cursor as last seen are read without a lock, planned, and the rows
   * inserted with the cursor moved in one compare-and-set statement that does nothing unless the cursor
   * is still where this pass started (stores/deliveries.ts insertDeliveriesIfCursorAt). So rows and
   * cursor still move together, an event is still fanned out once (another instance that moved the
   * cursor first makes this pass insert nothing; the (event, bot) pair stays unique as well), and after
   * a crash fan-out resumes at the cursor. A pass was BEGIN, the cursor's lock with the read, the
   * planning reads, the insert with the cursor's move, COMMIT; it is the read, the planning reads and
   * the insert: two round trips fewer per pass (measured: bench/notes/post-pg-profile.md).
   */
  async #passUnlocked(): Promise<boolean> {
    const paced = this.pacer.paced;
    const maxRows = paced ? MAX_ROWS_BUSY : MAX_ROWS;
    const batch = paced ? BATCH_BUSY : BATCH;
    const stores = this.storage.stores;
    const now = this.worker.clock.nowIso();
    const from = (this.#cursor ??= await stores.deliveries.readCursor(FANOUT_CURSOR, now));
    const events = await this.reader.readAfter(from, batch, stores.db);
    if (events.length === 0) return false;
    const reserved: string[] = [];
    const loopJournal: LoopJournal = new Map();
    let plan: Plan;
    let inserted: Set<string> | null;
    try {
      plan = await this.#plan(stores, events, now, maxRows, reserved, true, loopJournal);
      const { rows, upTo } = plan;
      inserted =
        rows.length <= MAX_ROWS_IF_CURSOR_AT
          ? await stores.deliveries.insertDeliveriesIfCursorAt(rows, now, {
              name: FANOUT_CURSOR,
              from,
              to: upTo,
            })
          : // More rows than one statement takes (an event for thousands of bots): a transaction.
            await this.storage.transaction(async (trx) =>
              (await trx.deliveries.lockCursor(FANOUT_CURSOR, now, false)) === from
                ? trx.deliveries.insertDeliveriesAndMoveCursor(rows, now, {
                    name: FANOUT_CURSOR,
                    position: upTo,
                  })
                : null,
            );
    } catch (err) {
      for (const bot of reserved) this.worker.unreserve(bot);
      this.#restoreLoopWindow(loopJournal);
      this.#cursor = undefined; // whether it moved is unknown (a broken connection): read it again
      throw err;
    }
    if (inserted === null) {
      // Another instance moved the cursor first: nothing was inserted. Go on from where it is now.
      for (const bot of reserved) this.worker.unreserve(bot);
      this.#restoreLoopWindow(loopJournal);
      this.#cursor = undefined;
      return true;
    }
    this.#cursor = plan.upTo;
    // What the rows cost later and elsewhere (see #passLocked).
    this.pacer.charge(plan.rows.length * ROW_AFTERCOST_MS);
    this.#handOver(
      reserved,
      plan.handOff.filter((c) => inserted.has(c.row.id)),
      plan.due.filter((r) => inserted.has(r.id)),
    );
    return plan.upTo < events[events.length - 1]!.position || events.length === batch;
  }

  /** One batch in one transaction that locks the cursor (SQLite, which has one writer anyway). */
  async #passLocked(): Promise<boolean> {
    const paced = this.pacer.paced;
    const maxRows = paced ? MAX_ROWS_BUSY : MAX_ROWS;
    const batch = paced ? BATCH_BUSY : BATCH;
    const sync = this.storage.runsOnEventLoop;
    const reserved: string[] = [];
    let handOff: Claimed[] = [];
    let due: NewDelivery[] = [];
    let more = false;
    try {
      await this.storage.transaction(async (stores) => {
        // On SQLite the whole transaction keeps the event loop (and the writer) busy; on PostgreSQL
        // it mostly waits for the database: only the planning is charged there (in #plan).
        const measured = sync ? this.pacer.measure() : () => undefined;
        const now = this.worker.clock.nowIso();
        const events = await this.reader.readAfter(
          await stores.deliveries.lockCursor(FANOUT_CURSOR, now, !this.#cursorRow),
          batch,
          stores.db,
        );
        this.#cursorRow = true;
        if (events.length === 0) return;
        const plan = await this.#plan(stores, events, now, maxRows, reserved, !sync, new Map());
        const inserted = await stores.deliveries.insertDeliveriesAndMoveCursor(plan.rows, now, {
          name: FANOUT_CURSOR,
          position: plan.upTo,
        });
        // A row that already existed (another instance fanned it out) is not ours to send.
        handOff = plan.handOff.filter((c) => inserted.has(c.row.id));
        due = plan.due.filter((r) => inserted.has(r.id));
        more = plan.upTo < events[events.length - 1]!.position || events.length === batch;
        measured();
        // What the rows cost later and elsewhere: the pages they dirty in the next group commit, the
        // WAL checkpoint, garbage. Not measurable per pass; estimated per row.
        this.pacer.charge(plan.rows.length * ROW_AFTERCOST_MS);
      });
    } catch (err) {
      for (const bot of reserved) this.worker.unreserve(bot);
      throw err;
    }
    this.#handOver(reserved, handOff, due);
    return more;
  }

  /**
   * After a pass inserted its rows: the worker gets the leased ones (`handOff`), learns of the due ones
   * (`due`), and gets back the reservations whose row was not inserted.
   */
  #handOver(reserved: string[], handOff: Claimed[], due: NewDelivery[]): void {
    const backlog = new Map<string, number>();
    for (const r of due) backlog.set(r.bot_id, (backlog.get(r.bot_id) ?? 0) + 1);
    // Reservations whose row was not inserted are given back.
    let left = reserved.length - handOff.length;
    if (left > 0) {
      const counts = new Map<string, number>();
      for (const bot of reserved) counts.set(bot, (counts.get(bot) ?? 0) + 1);
      for (const c of handOff) counts.set(c.row.bot_id, counts.get(c.row.bot_id)! - 1);
      for (const [bot, n] of counts)
        for (let i = 0; i < n && left > 0; i++, left--) this.worker.unreserve(bot);
    }
    this.worker.handOff(handOff);
    if (backlog.size > 0) {
      for (const [bot, n] of backlog) this.worker.noteBacklog(bot, n);
      this.worker.wake();
    }
  }

  /**
   * The deliveries for a batch of events, in event order, cut after the event that reaches `maxRows`
   * (`upTo`: the position the cursor moves to). Bots, memberships and topics are looked up once for
   * the batch. Deliveries the worker takes at once are inserted leased and listed in `handOff`; those
   * left due (to be claimed) in `due`. `reserved` collects every slot taken from the worker.
   */
  async #plan(
    stores: Stores,
    events: OutboxEvent[],
    now: string,
    maxRows: number,
    reserved: string[],
    chargeComputing: boolean,
    loopJournal: LoopJournal,
  ): Promise<Plan> {
    const orgIds = [...new Set(events.map((e) => e.org_id))];
    const byOrg = new Map<string, Candidate[]>();
    // On PostgreSQL the bot members of the batch's channels come with the subscribers (one round trip):
    // every channel an event that may reach a bot happened in (a superset of those looked up below).
    let channelBots: { parent: string; bot_id: string }[] | undefined;
    let subscribers: Subscriber[];
    if (this.reader.usesSequencer) {
      const channelIds = new Set<string>();
      for (const e of events) {
        const route = FANOUT_ROUTES[e.type];
        const channel = containerIds(e.data).channel;
        if (channel && route !== 'none' && route !== 'bot') channelIds.add(channel);
      }
      ({ subscribers, channelBots } = await stores.deliveries.subscribersAndChannelBots(
        orgIds,
        this.worker.inProcess,
        [...channelIds],
      ));
    } else subscribers = await stores.deliveries.subscribers(orgIds, this.worker.inProcess);
    for (const b of subscribers) {
      const list = byOrg.get(b.org_id) ?? [];
      list.push({ id: b.bot_id, events: this.#subscriptions(b.events), builtin: b.builtin });
      byOrg.set(b.org_id, list);
    }

    // First the events that may reach someone, and the containers whose bot members that needs.
    const work: {
      e: OutboxEvent;
      data: Record<string, unknown>;
      subscribed: Candidate[];
      direct: boolean;
    }[] = [];
    const topicIds = new Set<string>();
    for (const e of events) {
      const candidates = byOrg.get(e.org_id);
      const route = FANOUT_ROUTES[e.type];
      if (!candidates || route === 'none') continue;
      // Checked against its schema by the reader; read here through the fields every route needs.
      const data: Record<string, unknown> = e.data;
      if (route === 'bot') {
        const to = candidates.filter((b) => b.id === data.bot_id);
        if (to.length > 0) work.push({ e, data, subscribed: to, direct: true });
        continue;
      }
      const subscribed =
        route === 'owning_bot'
          ? candidates.filter((b) => b.id === data.bot_id)
          : candidates.filter((b) => b.events.has(e.type));
      if (subscribed.length === 0) continue; // the common case costs no membership lookup
      work.push({ e, data, subscribed, direct: false });
      const topic = containerIds(data).topic;
      if (topic) topicIds.add(topic);
    }
    const projectOfTopic = await stores.deliveries.topicProjects([...topicIds]);
    const containers = new Map<string, Container | undefined>();
    const ids = { channel: new Set<string>(), project: new Set<string>(), dm_room: new Set<string>() };
    for (const w of work) {
      if (w.direct) continue;
      const c = containerOf(w.data, projectOfTopic);
      containers.set(w.e.id, c);
      if (c) ids[c.kind].add(c.id);
    }
    const members = new Map<string, Set<string>>(); // `${kind}:${id}` → bot ids
    for (const kind of ['channel', 'project', 'dm_room'] as const) {
      const found =
        kind === 'channel' && channelBots
          ? channelBots
          : await stores.deliveries.botMembers(kind, [...ids[kind]]);
      for (const m of found) {
        const key = `${kind}:${m.parent}`;
        let set = members.get(key);
        if (!set) members.set(key, (set = new Set()));
        set.add(m.bot_id);
      }
    }

    // Who receives what, in event order, up to the cut.
    const computed = chargeComputing ? this.pacer.measure() : () => undefined;
    const pairs: { e: OutboxEvent; botId: string; blocked: string | null }[] = [];
    let upTo = events[events.length - 1]!.position;
    for (const { e, data, subscribed, direct } of work) {
      if (direct) {
        for (const b of subscribed) pairs.push({ e, botId: b.id, blocked: null });
      } else {
        const container = containers.get(e.id);
        const inside = container ? members.get(`${container.kind}:${container.id}`) : undefined;
        const subject =
          (e.type === 'member.joined' || e.type === 'member.left') && e.data.member_type === 'bot'
            ? e.data.member_id
            : undefined;
        for (const b of subscribed) {
          // Built-in system bots may hear some types from their whole organization (their orgEvents).
          const reached =
            inside?.has(b.id) || b.id === subject || this.worker.reachesOrganization(b.builtin, e.type, data);
          if (!reached || isOwnAction(e, b.id)) continue;
          const blocked = this.#overLoopBudget(e, b.id, loopJournal)
            ? `loop guard: more than ${LOOP_BUDGET} bot-written messages a minute here; not sent`
            : null;
          pairs.push({ e, botId: b.id, blocked });
        }
      }
      if (pairs.length >= maxRows) {
        upTo = e.position;
        break;
      }
    }
    computed();

    // What sending to the receivers needs (for the deliveries handed to the worker at once).
    const targets = await stores.deliveries.targets([...new Set(pairs.map((p) => p.botId))]);
    const computed2 = chargeComputing ? this.pacer.measure() : () => undefined;
    const rows: NewDelivery[] = [];
    const handOff: Claimed[] = [];
    const due: NewDelivery[] = [];
    let leaseUntil: string | undefined;
    for (const { e, botId, blocked } of pairs) {
      const target: ReceivingBot | undefined = targets.get(botId);
      const pending = blocked === null;
      const take = pending && target !== undefined && this.worker.reserve(target);
      if (take) reserved.push(botId);
      const row: NewDelivery = {
        id: newId(),
        org_id: e.org_id,
        bot_id: botId,
        event_id: e.id,
        event_seq: e.seq,
        event_position: e.position,
        event_type: e.type,
        event_created_at: e.created_at,
        state: pending ? 'pending' : 'failed',
        next_attempt_at: take ? (leaseUntil ??= this.worker.leaseUntil()) : now,
        last_error: blocked,
      };
      rows.push(row);
      if (pending && !take) due.push(row);
      if (take) handOff.push({ row: fullRow(row, now), data: e.dataJson, target });
    }
    computed2();
    return { rows, handOff, due, upTo };
  }

  #subscriptions(eventsJson: string): ReadonlySet<string> {
    let set = this.#parsed.get(eventsJson);
    if (!set) {
      if (this.#parsed.size >= 1000) this.#parsed.clear();
      set = new Set(parseList(eventsJson));
      this.#parsed.set(eventsJson, set);
    }
    return set;
  }

  /**
   * Counts a bot-written message.created toward its receiver's budget in that container. `journal`
   * keeps each key's list as it was before this pass touched it (see #restoreLoopWindow).
   */
  #overLoopBudget(e: OutboxEvent, botId: string, journal: LoopJournal): boolean {
    if (e.type !== 'message.created' || e.data.sender_type !== 'bot') return false;
    const place = e.data.channel_id ?? e.data.topic_id ?? e.data.dm_room_id;
    const key = `${botId}:${String(place)}`;
    if (!journal.has(key)) journal.set(key, this.#loopWindow.get(key));
    const at = Date.parse(e.created_at);
    const recent = (this.#loopWindow.get(key) ?? []).filter((t) => t > at - LOOP_WINDOW_MS);
    if (recent.length >= LOOP_BUDGET) {
      this.#loopWindow.set(key, recent);
      return true;
    }
    recent.push(at);
    this.#loopWindow.set(key, recent);
    if (this.#loopWindow.size > 10_000) this.#loopWindow.clear(); // a guard, not a ledger
    return false;
  }

  /** Undoes a pass's counting (it inserted nothing: the messages were not delivered by it). */
  #restoreLoopWindow(journal: LoopJournal): void {
    for (const [key, before] of journal) {
      if (before === undefined) this.#loopWindow.delete(key);
      else this.#loopWindow.set(key, before);
    }
  }
}

/** The row as the worker gets it from a claim. */
function fullRow(r: NewDelivery, now: string): Selectable<DeliveryRow> {
  // Fields first, then the row (a literal that starts with a spread is slow: domain/objects.ts).
  return {
    payload: null,
    attempts: 0,
    last_attempt_at: null,
    last_status: null,
    created_at: now,
    updated_at: now,
    ...r,
  };
}

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

function containerIds(data: Record<string, unknown>) {
  return {
    channel: str(data.channel_id),
    dm: str(data.dm_room_id),
    project: str(data.project_id),
    topic: str(data.topic_id),
  };
}

/** The container an event happened in, from the ids its data carries. */
function containerOf(
  data: Record<string, unknown>,
  projectOfTopic: Map<string, string>,
): Container | undefined {
  const { channel, dm, project, topic } = containerIds(data);
  if (channel) return { kind: 'channel', id: channel };
  if (dm) return { kind: 'dm_room', id: dm };
  if (project) return { kind: 'project', id: project };
  const p = topic ? projectOfTopic.get(topic) : undefined;
  return p ? { kind: 'project', id: p } : undefined;
}

/** message.* caused by the bot itself (its message, its edit, its deletion). */
function isOwnAction(e: OutboxEvent, botId: string): boolean {
  switch (e.type) {
    case 'message.created':
      return e.data.sender_type === 'bot' && e.data.sender_id === botId;
    case 'message.updated':
      return e.data.edited_by_type === 'bot' && e.data.edited_by_id === botId;
    case 'message.deleted':
      return e.data.deleted_by_type === 'bot' && e.data.deleted_by_id === botId;
    default:
      return false;
  }
}

function parseList(text: string): string[] {
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}
