import type { z } from 'zod';
import type { ContainersView } from '../../operations/containers/list-containers.js';
import type { SearchResultView } from '../../operations/search/search.js';
import type { MessageView, TaskView, UserView } from '../../operations/views.js';

/**
 * The text of tool results (docs/MCP.md, "Result format"): a first line a person can read, then
 * `field: value` lines or one `- ` line per item, every line carrying the ids a program needs.
 */

type Task = z.infer<typeof TaskView>;
type Channel = NonNullable<ContainersView['channels']>[number];

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const orNone = (v: string | null | undefined) => (v === null || v === undefined || v === '' ? 'none' : v);

function containerLine(m: Pick<MessageView, 'channel_id' | 'topic_id' | 'dm_room_id'>): string {
  if (m.channel_id) return `channel_id: ${m.channel_id}`;
  if (m.topic_id) return `topic_id: ${m.topic_id}`;
  return `dm_room_id: ${m.dm_room_id}`;
}

export function sentMessage(m: MessageView): string {
  return `Message sent.\nmessage_id: ${m.id}\n${containerLine(m)}\ncreated_at: ${m.created_at}`;
}

/** A message's actions on one line: `actions: [approve] Approve (button) | [size] select: S, M`. */
function actionsLine(m: MessageView): string {
  if (!m.actions || m.actions.length === 0) return '';
  const one = (a: NonNullable<MessageView['actions']>[number]) =>
    a.type === 'button'
      ? `[${a.id}] ${a.label} (button)`
      : `[${a.id}] select: ${a.options.map((o) => o.label).join(', ')}`;
  return `\n  actions: ${m.actions.map(one).join(' | ')}`;
}

/** "reactions: 👍 2, 🎉 1" for a listed message with reactions (read_messages). */
function reactionsLine(m: MessageView & { reactions?: { emoji: string; count: number }[] }): string {
  if (!m.reactions || m.reactions.length === 0) return '';
  return `\n  reactions: ${m.reactions.map((r) => `${r.emoji} ${r.count}`).join(', ')}`;
}

/**
 * One message of a list. Built by appending, the content indented only when it has line breaks, and
 * the actions and reactions lines only when there are some: read_messages renders 20 of these per
 * call, and this form takes half the time of one template with a regex replace and two helper calls
 * (bench/notes/mcp-profile.md).
 */
export function messageBlock(m: MessageView & { reactions?: { emoji: string; count: number }[] }): string {
  let s = '- message_id: ' + m.id + ' | ' + m.sender_type + '_id: ' + m.sender_id + ' | ' + m.created_at;
  if (m.edited_at) s += ' (edited ' + m.edited_at + ')';
  const c = m.content;
  s += '\n  ' + (c.includes('\n') ? c.replace(/\n/g, '\n  ') : c);
  if (m.actions && m.actions.length > 0) s += actionsLine(m);
  if (m.reactions && m.reactions.length > 0) s += reactionsLine(m);
  return s;
}

export function messageList(where: string, items: MessageView[]): string {
  if (items.length === 0) return `No messages in ${where}.`;
  let s = `${plural(items.length, 'message')} in ${where}, newest first:`;
  for (const m of items) s += '\n' + messageBlock(m);
  return s;
}

const channelLine = (c: Channel) =>
  `- #${c.name} | channel_id: ${c.id} | ${c.is_private ? 'private' : 'public'}`;

export function containers(v: ContainersView): string {
  const parts: string[] = [];
  if (v.channels)
    parts.push(`Channels (${v.channels.length}):${v.channels.map((c) => `\n${channelLine(c)}`).join('')}`);
  if (v.projects)
    parts.push(
      `Projects (${v.projects.length}):${v.projects.map((p) => `\n- ${p.name} | project_id: ${p.id}`).join('')}`,
    );
  if (v.topics)
    parts.push(
      `Topics (${v.topics.length}):${v.topics
        .map((t) => `\n- ${t.name} | topic_id: ${t.id} | project_id: ${t.project_id}`)
        .join('')}`,
    );
  return parts.join('\n\n');
}

function taskFields(t: Task): string {
  return [
    `task_id: ${t.id}`,
    `topic_id: ${t.topic_id}`,
    `title: ${t.title}`,
    `status: ${t.status}`,
    `priority: ${t.priority}`,
    `assignee_id: ${orNone(t.assignee_id)}`,
    `due_date: ${orNone(t.due_date)}`,
    `description: ${orNone(t.description)}`,
    `updated_at: ${t.updated_at}`,
  ].join('\n');
}

export const createdTask = (t: Task) => `Task created.\n${taskFields(t)}`;
export const updatedTask = (t: Task) => `Task updated.\n${taskFields(t)}`;

const taskLine = (t: Task) =>
  `- [${t.status}] ${t.title} | task_id: ${t.id} | priority: ${t.priority} | assignee_id: ${orNone(t.assignee_id)} | due_date: ${orNone(t.due_date)}`;

export function taskList(topicId: string, items: Task[]): string {
  if (items.length === 0) return `No tasks in topic ${topicId} match.`;
  return `${plural(items.length, 'task')} in topic ${topicId}, newest first:\n${items.map(taskLine).join('\n')}`;
}

export function user(u: UserView): string {
  return [
    `User ${u.display_name}`,
    `id: ${u.id}`,
    `email: ${u.email}`,
    `display_name: ${u.display_name}`,
    `role: ${u.role}`,
    `status: ${u.status}`,
    `department: ${orNone(u.department)}`,
  ].join('\n');
}

const userLine = (u: UserView) =>
  `- ${u.display_name} <${u.email}> | id: ${u.id} | role: ${u.role} | status: ${u.status} | department: ${orNone(u.department)}`;

export function userList(items: UserView[]): string {
  if (items.length === 0) return 'No users match.';
  return `${plural(items.length, 'user')}:\n${items.map(userLine).join('\n')}`;
}

export function searchResults(r: SearchResultView): string {
  const parts = [`Search results for "${r.query}":`];
  if (r.messages)
    parts.push(
      `Messages (${r.messages.length}):${r.messages
        .map((m) => `\n${messageBlock(m).replace(/^- /, `- ${containerLine(m)} | `)}`)
        .join('')}`,
    );
  if (r.users) parts.push(`Users (${r.users.length}):${r.users.map((u) => `\n${userLine(u)}`).join('')}`);
  if (r.tasks)
    parts.push(
      `Tasks (${r.tasks.length}):${r.tasks.map((t) => `\n${taskLine(t)} | topic_id: ${t.topic_id}`).join('')}`,
    );
  if (r.channels)
    parts.push(`Channels (${r.channels.length}):${r.channels.map((c) => `\n${channelLine(c)}`).join('')}`);
  return parts.join('\n\n');
}
