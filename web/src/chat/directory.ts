import { api, ok } from '../api/client';
import type { Bot, Channel, DmRoom, Message, Project, Topic, User, UserListItem } from '../api/types';

/** Where messages live: a channel, a project's topic or a DM room. */
export interface RoomRef {
  kind: 'channel' | 'topic' | 'dm';
  id: string;
}

export const roomKey = (r: RoomRef): string => `${r.kind}:${r.id}`;

export function roomOfMessage(m: Pick<Message, 'channel_id' | 'topic_id' | 'dm_room_id'>): RoomRef | null {
  if (m.topic_id) return { kind: 'topic', id: m.topic_id };
  if (m.dm_room_id) return { kind: 'dm', id: m.dm_room_id };
  if (m.channel_id) return { kind: 'channel', id: m.channel_id };
  return null;
}

/** Everything the sidebar lists and the names messages need, loaded once and refreshed on demand. */
export interface Directory {
  channels: Channel[];
  projects: (Project & { topics: Topic[] })[];
  dms: DmRoom[];
  users: Map<string, UserListItem>;
  bots: Map<string, Bot>;
}

export async function loadDirectory(): Promise<Directory> {
  // One request for channels, projects and their topics; the rest in parallel with it.
  const [containers, dms, users, bots] = await Promise.all([
    // The sidebar lists the channels one is in (others are found with "Browse channels").
    ok(api.GET('/api/containers', { params: { query: { type: 'all', joined: 'true' } } })),
    ok(api.GET('/api/dm-rooms')),
    ok(api.GET('/api/users', { params: { query: { limit: 200 } } })),
    ok(api.GET('/api/bots')),
  ]);
  const topics = containers.topics ?? [];
  return {
    channels: containers.channels ?? [],
    projects: (containers.projects ?? []).map((p) => ({
      ...p,
      topics: topics.filter((t) => t.project_id === p.id),
    })),
    dms: dms.items,
    users: new Map(users.items.map((u) => [u.id, u])),
    bots: new Map(bots.items.map((b) => [b.id, b])),
  };
}

export function senderName(d: Directory | null, m: Pick<Message, 'sender_type' | 'sender_id'>): string {
  // Until the directory has loaded, messages show without names rather than wait for it.
  if (d === null) return m.sender_type === 'bot' ? 'Bot' : '…';
  if (m.sender_type === 'bot') return d.bots.get(m.sender_id)?.name ?? 'Bot';
  return d.users.get(m.sender_id)?.display_name ?? 'Unknown user';
}

export function dmName(d: Directory, room: DmRoom, me: User): string {
  const others = room.members.filter((m) => !(m.type === 'user' && m.id === me.id));
  if (others.length === 0) return `${me.display_name} (you)`;
  return others.map((m) => senderName(d, { sender_type: m.type, sender_id: m.id })).join(', ');
}

export function roomTitle(d: Directory, r: RoomRef, me: User): string {
  if (r.kind === 'channel') return `#${d.channels.find((c) => c.id === r.id)?.name ?? 'channel'}`;
  if (r.kind === 'topic') {
    for (const p of d.projects) {
      const t = p.topics.find((x) => x.id === r.id);
      if (t) return `${p.name} › ${t.name}`;
    }
    return 'Topic';
  }
  const dm = d.dms.find((x) => x.id === r.id);
  return dm ? dmName(d, dm, me) : 'Direct message';
}

/** The room in the URL hash (#/channel/<id>), so a reload or a shared link opens the same room. */
export function roomFromHash(): RoomRef | null {
  const m = /^#\/(channel|topic|dm)\/([\w-]+)(?:\/[\w-]+)?$/.exec(location.hash);
  return m ? { kind: m[1] as RoomRef['kind'], id: m[2]! } : null;
}

/** The message of a message link (/#/channel/<id>/<message id>), shown highlighted. */
export function messageFromHash(): string | null {
  return /^#\/(?:channel|topic|dm)\/[\w-]+\/([\w-]+)$/.exec(location.hash)?.[1] ?? null;
}
