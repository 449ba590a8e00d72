import type { Logger } from 'pino';
import { newId, nowIso } from '../domain/ids.js';
import type { OutboxEvent, OutboxReader } from '../events/outbox-reader.js';
import type { DeliveryRow } from '../storage/schema.js';
import type { Storage } from '../storage/storage.js';
import type { Stores } from '../storage/stores/index.js';

/**
 * Fan-out: outbox → one `webhook_deliveries` row per bot that should receive the event. It reads the
 * outbox by position (events/outbox-reader.ts) from a durable cursor, and inserts the deliveries and
 * moves the cursor in ONE transaction: after a crash it resumes exactly where it stopped, and an event
 * is never fanned out twice (the (event, bot) pair is unique as well, for instances racing on PostgreSQL,
 * where the cursor row is also locked for the transaction).
 *
 * Who receives what (docs/WEBHOOKS.md "Who receives which events"):
 *  - a bot receives the types in its `events` list, only from containers it reaches when the event is
 *    fanned out: a channel it is a member of, a topic of a project it is a member of, a DM room it is
 *    part of; only in its own organization; only while it is active and has a webhook URL;
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
 */

export const FANOUT_CURSOR = 'webhook-fanout';
/** Outbox events that never become deliveries here (see above). */
const NOT_FANNED_OUT = new Set(['resources.changed', 'command.invoked']);
/** Outbox events for one bot, `data.bot_id`, whatever its subscriptions (see above). */
const TO_OWNING_BOT = new Set(['action.invoked']);
const BATCH = 500;
const LOOP_BUDGET = 60;
const LOOP_WINDOW_MS = 60_000;

type Container = { kind: 'channel' | 'project' | 'dm_room'; id: string };
interface Candidate {
  id: string;
  events: Set<string>;
}

export class Fanout {
  #unsubscribe: (() => void) | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  /** Recent bot-authored messages delivered per `${bot}:${container}` (event times, ms). */
  readonly #loopWindow = new Map<string, number[]>();

  constructor(
    private readonly storage: Storage,
    private readonly reader: OutboxReader,
    private readonly log: Logger,
    /** Called after deliveries were created (wakes the worker). */
    private readonly onDeliveries: () => void,
  ) {}

  start(): void {
    this.#stopped = false;
    this.#unsubscribe = this.reader.onWake(() => void this.pump());
    void this.pump();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe?.();
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
            const { read, created } = await this.#pass();
            if (created > 0) this.onDeliveries();
            if (read < BATCH) break;
          }
        } while (this.#again && !this.#stopped);
      } catch (err) {
        this.log.error({ err }, 'webhook fan-out failed; retrying');
        if (!this.#stopped) setTimeout(() => void this.pump(), 1000).unref();
      } finally {
        this.#running = undefined;
      }
    })();
    return this.#running;
  }

  async #pass(): Promise<{ read: number; created: number }> {
    return this.storage.transaction(async (stores) => {
      const now = nowIso();
      const cursor = await stores.deliveries.lockCursor(FANOUT_CURSOR, now);
      const events = await this.reader.readAfter(cursor, BATCH, stores.db);
      if (events.length === 0) return { read: 0, created: 0 };
      const rows = await this.#plan(stores, events, now);
      await stores.deliveries.insertMany(rows);
      await stores.deliveries.setCursor(FANOUT_CURSOR, events[events.length - 1]!.position, now);
      return { read: events.length, created: rows.length };
    });
  }

  /** The deliveries for a batch of events (membership and bots looked up once per batch). */
  async #plan(stores: Stores, events: OutboxEvent[], now: string): Promise<DeliveryRow[]> {
    const orgIds = [...new Set(events.map((e) => e.org_id))];
    const byOrg = new Map<string, Candidate[]>();
    for (const b of await stores.deliveries.webhookBots(orgIds)) {
      const list = byOrg.get(b.org_id) ?? [];
      list.push({ id: b.id, events: new Set(parseList(b.events)) });
      byOrg.set(b.org_id, list);
    }
    const members = new Map<string, Promise<Set<string>>>();
    const botsIn = (c: Container) => {
      const key = `${c.kind}:${c.id}`;
      let p = members.get(key);
      if (!p) {
        p = stores.containers
          .listMembers(c.kind, c.id)
          .then((ms) => new Set(ms.filter((m) => m.member_type === 'bot').map((m) => m.member_id)));
        members.set(key, p);
      }
      return p;
    };
    const topics = new Map<string, Promise<string | undefined>>();
    const projectOf = (topicId: string) => {
      let p = topics.get(topicId);
      if (!p) {
        p = stores.containers.getTopic(topicId).then((t) => t?.project_id);
        topics.set(topicId, p);
      }
      return p;
    };

    const rows: DeliveryRow[] = [];
    for (const e of events) {
      const candidates = byOrg.get(e.org_id);
      if (!candidates || NOT_FANNED_OUT.has(e.type)) continue;
      const data = parseObject(e.data);
      if (e.type === 'job.due') {
        const to = candidates.find((b) => b.id === data.bot_id);
        if (to) rows.push(directDelivery(e, to.id, now));
        continue;
      }
      const subscribed = TO_OWNING_BOT.has(e.type)
        ? candidates.filter((b) => b.id === data.bot_id)
        : candidates.filter((b) => b.events.has(e.type));
      if (subscribed.length === 0) continue; // the common case costs no membership lookup
      const container = await containerOf(data, projectOf);
      const inside = container ? await botsIn(container) : new Set<string>();
      const subject = e.type.startsWith('member.') && data.member_type === 'bot' ? data.member_id : undefined;
      const receivers = subscribed
        .filter((b) => inside.has(b.id) || b.id === subject)
        .filter((b) => !isOwnAction(e.type, data, b.id))
        .map((b) => b.id);
      for (const botId of receivers) {
        const blocked = this.#overLoopBudget(e, data, botId);
        rows.push({
          id: newId(),
          org_id: e.org_id,
          bot_id: botId,
          event_id: e.id,
          event_seq: e.seq,
          event_position: e.position,
          event_type: e.type,
          event_created_at: e.created_at,
          payload: null,
          state: blocked ? 'failed' : 'pending',
          attempts: 0,
          next_attempt_at: now,
          last_attempt_at: null,
          last_status: null,
          last_error: blocked
            ? `loop guard: more than ${LOOP_BUDGET} bot-written messages a minute here; not sent`
            : null,
          created_at: now,
          updated_at: now,
        });
      }
    }
    return rows;
  }

  /** Counts a bot-written message.created toward its receiver's budget in that container. */
  #overLoopBudget(e: OutboxEvent, data: Record<string, unknown>, botId: string): boolean {
    if (e.type !== 'message.created' || data.sender_type !== 'bot') return false;
    const place = data.channel_id ?? data.topic_id ?? data.dm_room_id;
    const key = `${botId}:${String(place)}`;
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
}

/** A delivery of an event addressed to one bot (job.due). */
function directDelivery(e: OutboxEvent, botId: string, now: string): DeliveryRow {
  return {
    id: newId(),
    org_id: e.org_id,
    bot_id: botId,
    event_id: e.id,
    event_seq: e.seq,
    event_position: e.position,
    event_type: e.type,
    event_created_at: e.created_at,
    payload: null,
    state: 'pending',
    attempts: 0,
    next_attempt_at: now,
    last_attempt_at: null,
    last_status: null,
    last_error: null,
    created_at: now,
    updated_at: now,
  };
}

/** The container an event happened in, from the ids its data carries. */
async function containerOf(
  data: Record<string, unknown>,
  projectOf: (topicId: string) => Promise<string | undefined>,
): Promise<Container | undefined> {
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const channel = str(data.channel_id);
  if (channel) return { kind: 'channel', id: channel };
  const dm = str(data.dm_room_id);
  if (dm) return { kind: 'dm_room', id: dm };
  const project = str(data.project_id);
  if (project) return { kind: 'project', id: project };
  const topic = str(data.topic_id);
  if (topic) {
    const p = await projectOf(topic);
    return p ? { kind: 'project', id: p } : undefined;
  }
  return undefined;
}

/** message.* caused by the bot itself (its message, its edit, its deletion). */
function isOwnAction(type: string, data: Record<string, unknown>, botId: string): boolean {
  if (!type.startsWith('message.')) return false;
  const [byType, byId] =
    type === 'message.updated'
      ? [data.edited_by_type, data.edited_by_id]
      : type === 'message.deleted'
        ? [data.deleted_by_type, data.deleted_by_id]
        : [data.sender_type, data.sender_id];
  return byType === 'bot' && byId === botId;
}

function parseObject(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
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
