import { isAppError } from '../domain/errors.js';
import { USER_EVENT_TYPES } from '../domain/events.js';
import { loadChannel, loadDmRoom, loadProject, loadTopic } from '../operations/access.js';
import type { UserActor } from '../operations/context.js';
import type { Stores } from '../storage/stores/index.js';
import type { FeedEvent } from './feed.js';

/**
 * Which pushed events a user sees: the events of containers the REST reads would show them, decided by
 * the same functions (operations/access.ts), so the two can never disagree. Only the user's own
 * organization is streamed (a system_admin too: the stream is not an audit log).
 */

/**
 * Events pushed to clients. command.invoked (for one bot) and internal events never are, except the
 * user events (read_marker.updated), which reach only the user they name.
 */
export const PUSHED_EVENT_TYPES: ReadonlySet<string> = new Set([
  'message.created',
  'message.updated',
  'message.deleted',
  'task.created',
  'task.status_changed',
  'task.assigned',
  'channel.updated',
  'member.joined',
  'member.left',
  'channel.created',
  'channel.archived',
  'project.created',
  'project.updated',
  'project.archived',
  'topic.created',
  'topic.updated',
  'topic.archived',
  'reaction.added',
  'reaction.removed',
  ...USER_EVENT_TYPES,
]);
const FOR_ONE_USER: ReadonlySet<string> = new Set(USER_EVENT_TYPES);

export type ContainerKind = 'channel' | 'topic' | 'dm_room' | 'project';
export interface ContainerKey {
  kind: ContainerKind;
  id: string;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);

/** The container an event belongs to; null when it belongs to none (then it is not pushed). */
export function containerOf(ev: FeedEvent): ContainerKey | null {
  const d: Readonly<Record<string, unknown>> = ev.data;
  const channel = str(d.channel_id);
  if (channel) return { kind: 'channel', id: channel };
  const topic = str(d.topic_id);
  if (topic) return { kind: 'topic', id: topic };
  const room = str(d.dm_room_id);
  if (room) return { kind: 'dm_room', id: room };
  const project = str(d.project_id);
  if (project) return { kind: 'project', id: project };
  return null;
}

/** member.joined / member.left about the user themself: they learn they left even a private channel. */
export function isAboutUser(ev: FeedEvent, userId: string): boolean {
  return (
    (ev.type === 'member.joined' || ev.type === 'member.left') &&
    ev.data.member_type === 'user' &&
    ev.data.member_id === userId
  );
}

/**
 * How long an answer is reused. Membership changes of channels and projects and channel privacy
 * changes emit events that drop the cached answers at once (see `invalidates`; a project's drop its
 * topics' too), and DM rooms never change members; the time limit is a safety net for changes that
 * emit nothing (a role changed by an admin is also picked up by the heartbeat's token check).
 */
const TTL_MS = 60_000;
const MAX_ENTRIES = 2_000;

/** The containers whose cached answers an event makes stale. */
export function invalidates(ev: FeedEvent): ContainerKey | null {
  if (ev.type === 'member.joined' || ev.type === 'member.left' || ev.type === 'channel.updated') {
    return containerOf(ev);
  }
  return null;
}

/** One connection's answers, by container. */
export class VisibilityCache {
  readonly #entries = new Map<string, { visible: boolean; at: number }>();
  /** Bumped by every invalidation: an answer asked before it is used once but not kept. */
  #generation = 0;

  constructor(
    private readonly stores: Stores,
    private actor: UserActor,
  ) {}

  /** A new actor (its role may have changed): every answer is asked again. */
  reset(actor: UserActor): void {
    this.actor = actor;
    this.#generation++;
    this.#entries.clear();
  }

  forget(c: ContainerKey): void {
    this.#generation++;
    this.#entries.delete(`${c.kind}:${c.id}`);
    // Topics are answered through their project: which topic belongs to it is not known here.
    if (c.kind === 'project')
      for (const k of this.#entries.keys()) if (k.startsWith('topic:')) this.#entries.delete(k);
  }

  /** Synchronous when the answer is cached, so most events are dispatched without awaiting. */
  canSee(ev: FeedEvent): boolean | Promise<boolean> {
    if (ev.orgId !== this.actor.orgId || !PUSHED_EVENT_TYPES.has(ev.type)) return false;
    // A user event (a read marker) is that user's own business: nobody else's, whatever they can read.
    if (FOR_ONE_USER.has(ev.type)) return 'user_id' in ev.data && ev.data.user_id === this.actor.userId;
    if (isAboutUser(ev, this.actor.userId)) return true;
    const c = containerOf(ev);
    if (!c) return false;
    const key = `${c.kind}:${c.id}`;
    const hit = this.#entries.get(key);
    const now = Date.now();
    if (hit && now - hit.at < TTL_MS) return hit.visible;
    const generation = this.#generation;
    return this.#ask(c).then((visible) => {
      if (generation !== this.#generation) return visible;
      if (this.#entries.size >= MAX_ENTRIES) this.#entries.clear();
      this.#entries.set(key, { visible, at: now });
      return visible;
    });
  }

  async #ask(c: ContainerKey): Promise<boolean> {
    try {
      switch (c.kind) {
        case 'channel':
          await loadChannel(this.stores, this.actor, c.id, 'read');
          break;
        case 'topic':
          await loadTopic(this.stores, this.actor, c.id);
          break;
        case 'dm_room':
          await loadDmRoom(this.stores, this.actor, c.id);
          break;
        case 'project':
          await loadProject(this.stores, this.actor, c.id);
          break;
      }
      return true;
    } catch (err) {
      // not_found is the answer "not visible"; anything else (the database is down) is not an answer.
      if (isAppError(err) && err.code === 'not_found') return false;
      throw err;
    }
  }
}
