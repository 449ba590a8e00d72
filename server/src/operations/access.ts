import { AppError, conflict, notFound } from '../domain/errors.js';
import type { ChannelRow, DmRoomRow, ProjectRow, TopicRow } from '../storage/schema.js';
import { channelRowOf } from '../storage/stores/containers.js';
import type { Stores } from '../storage/stores/index.js';
import type { ContainerRef } from '../storage/stores/messages.js';
import { actorRef, type Actor, type PreloadedChannel } from './context.js';

/**
 * Who may see and change what. Anything the actor may not see answers `not_found`, exactly as if it
 * did not exist, so that other organizations' data cannot be detected.
 */

export const isSystemAdmin = (a: Actor): boolean => a.kind === 'user' && a.role === 'system_admin';

/** system_admin anywhere; org_admin within its organization. */
export function isOrgAdmin(a: Actor, orgId: string): boolean {
  if (a.kind !== 'user') return false;
  return a.role === 'system_admin' || (a.role === 'org_admin' && a.orgId === orgId);
}

/** Same organization, or a system_admin. */
export const inOrg = (a: Actor, orgId: string): boolean => a.orgId === orgId || isSystemAdmin(a);

export type Access = 'read' | 'write';

/**
 * A bot key's `containers` grant (domain/grants.ts): the key reads and acts only in the containers it
 * names (a topic through itself or its project); elsewhere the container answers "not found", as one
 * the bot is not a member of does.
 */
export function outsideGrant(actor: Actor, ...ids: (string | null | undefined)[]): boolean {
  const allowed = actor.kind === 'bot' ? actor.grants?.containers : null;
  if (!allowed) return false;
  return !ids.some((id) => id != null && allowed.has(id));
}

/**
 * Channels: bots reach only channels they are members of. Users read public channels of their
 * organization and private ones they belong to; posting needs membership. Organization admins read
 * and manage every channel of their organization.
 */
export async function loadChannel(
  stores: Stores,
  actor: Actor,
  id: string,
  access: Access,
  preloaded?: PreloadedChannel,
): Promise<ChannelRow> {
  // Read with the credential when the request's path named it (OpContext.channel): not read again.
  const ch =
    preloaded?.id === id ? preloaded.row : await stores.containers.getChannelFor(id, actorRef(actor));
  if (!ch || !inOrg(actor, ch.org_id) || outsideGrant(actor, id)) throw notFound('Channel');
  const is_member = ch.is_member;
  const row = channelRowOf(ch); // without the is_member the read added
  if (!is_member && !isOrgAdmin(actor, ch.org_id) && !(actor.kind === 'user' && ch.is_private === 0))
    throw notFound('Channel');
  if (access === 'read') return row;
  if (row.archived_at) throw conflict('The channel is archived');
  if (is_member || isOrgAdmin(actor, ch.org_id)) return row;
  throw new AppError('forbidden', 'Join the channel before posting in it');
}

/** Projects: members (users or bots) and organization admins. */
export async function loadProject(stores: Stores, actor: Actor, id: string): Promise<ProjectRow> {
  const p = await stores.containers.getProject(id);
  if (!p || !inOrg(actor, p.org_id) || outsideGrant(actor, id)) throw notFound('Project');
  if (isOrgAdmin(actor, p.org_id)) return p;
  if (await stores.containers.isMember('project', id, actorRef(actor))) return p;
  throw notFound('Project');
}

/** Topics are reached through their project. */
export async function loadTopic(stores: Stores, actor: Actor, id: string): Promise<TopicRow> {
  const t = await stores.containers.getTopicFor(id, actorRef(actor));
  if (!t || !inOrg(actor, t.org_id) || outsideGrant(actor, id, t.project_id)) throw notFound('Topic');
  const { is_member, ...row } = t;
  if (is_member || isOrgAdmin(actor, t.org_id)) return row;
  throw notFound('Topic');
}

/** DM rooms: their members only (not even admins read other people's DMs). */
export async function loadDmRoom(stores: Stores, actor: Actor, id: string): Promise<DmRoomRow> {
  const r = await stores.containers.getDmRoom(id);
  if (!r || r.org_id !== actor.orgId || outsideGrant(actor, id)) throw notFound('DM room');
  if (await stores.containers.isMember('dm_room', id, actorRef(actor))) return r;
  throw notFound('DM room');
}

/**
 * Loads a message container and checks access; returns its organization. `preloaded`: the channel read
 * with the credential (OpContext.channel), if any.
 */
export async function loadContainer(
  stores: Stores,
  actor: Actor,
  c: ContainerRef,
  access: Access,
  preloaded?: PreloadedChannel,
): Promise<{ orgId: string }> {
  switch (c.kind) {
    case 'channel':
      return { orgId: (await loadChannel(stores, actor, c.id, access, preloaded)).org_id };
    case 'topic': {
      const t = await loadTopic(stores, actor, c.id);
      if (access === 'write' && t.archived_at) throw conflict('The topic is archived');
      return { orgId: t.org_id };
    }
    case 'dm_room':
      return { orgId: (await loadDmRoom(stores, actor, c.id)).org_id };
  }
}
