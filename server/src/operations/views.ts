import { KeyGrantsView, type KeyGrants } from '../domain/grants.js';
import { z } from 'zod';
import { MessageActions, readActions } from '../domain/actions.js';
import type {
  BotApiKeyRow,
  BotRow,
  ChannelRow,
  DmRoomRow,
  MessageRow,
  ProjectRow,
  TaskRow,
  TopicRow,
} from '../storage/schema.js';
import type { UserWithDepartment } from '../storage/stores/users.js';

/**
 * How resources look in API answers (REST and MCP alike), with the zod schema of each shape for the
 * OpenAPI document. One place, so every surface shows the same fields.
 */

const ts = z.string().describe('ISO-8601 UTC timestamp');
const nullableTs = ts.nullable();

export const UserView = z.object({
  id: z.string(),
  org_id: z.string(),
  email: z.string(),
  display_name: z.string(),
  role: z.string(),
  status: z.string(),
  department: z.string().nullable(),
  created_at: ts,
});
export type UserView = z.infer<typeof UserView>;
export const userView = (u: UserWithDepartment): UserView => ({
  id: u.id,
  org_id: u.org_id,
  email: u.email,
  display_name: u.display_name,
  role: u.role,
  status: u.status,
  department: u.department,
  created_at: u.created_at,
});

export const ChannelView = z.object({
  id: z.string(),
  org_id: z.string(),
  name: z.string(),
  description: z.string(),
  is_private: z.boolean(),
  created_at: ts,
  updated_at: ts,
  archived_at: ts.nullable(),
  created_by: z.string().nullable().describe('The user who created it'),
});
export const channelView = (c: ChannelRow): z.infer<typeof ChannelView> => ({
  id: c.id,
  org_id: c.org_id,
  name: c.name,
  description: c.description,
  is_private: c.is_private === 1,
  created_at: c.created_at,
  updated_at: c.updated_at,
  archived_at: c.archived_at ?? null,
  created_by: c.created_by,
});

export const ProjectView = z.object({
  id: z.string(),
  org_id: z.string(),
  name: z.string(),
  description: z.string(),
  created_at: ts,
  archived_at: ts.nullable(),
  created_by: z.string().nullable().describe('The user who created it'),
});
export const projectView = (p: ProjectRow): z.infer<typeof ProjectView> => ({
  id: p.id,
  org_id: p.org_id,
  name: p.name,
  description: p.description,
  created_at: p.created_at,
  archived_at: p.archived_at ?? null,
  created_by: p.created_by,
});

export const TopicView = z.object({
  id: z.string(),
  org_id: z.string(),
  project_id: z.string(),
  name: z.string(),
  created_at: ts,
  archived_at: ts.nullable(),
  created_by: z.string().nullable().describe('The user who created it'),
});
export const topicView = (t: TopicRow): z.infer<typeof TopicView> => ({
  id: t.id,
  org_id: t.org_id,
  project_id: t.project_id,
  name: t.name,
  created_at: t.created_at,
  archived_at: t.archived_at ?? null,
  created_by: t.created_by,
});

export const DmRoomView = z.object({
  id: z.string(),
  org_id: z.string(),
  members: z.array(z.object({ type: z.enum(['user', 'bot']), id: z.string() })),
  created_at: ts,
});
export const dmRoomView = (r: DmRoomRow): z.infer<typeof DmRoomView> => ({
  id: r.id,
  org_id: r.org_id,
  members: r.member_key.split(',').map((k) => {
    const [type, id] = k.split(':') as ['user' | 'bot', string];
    return { type, id };
  }),
  created_at: r.created_at,
});

export const MessageView = z.object({
  id: z.string(),
  org_id: z.string(),
  channel_id: z.string().nullable(),
  topic_id: z.string().nullable(),
  dm_room_id: z.string().nullable(),
  sender_type: z.enum(['user', 'bot']),
  sender_id: z.string(),
  bot_id: z.string().nullable(),
  content: z.string(),
  content_html: z.string().nullable(),
  actions: MessageActions,
  created_at: ts,
  edited_at: nullableTs,
  deleted_at: nullableTs,
});
export type MessageView = z.infer<typeof MessageView>;
export const messageView = (m: MessageRow): MessageView => ({
  id: m.id,
  org_id: m.org_id,
  channel_id: m.channel_id,
  topic_id: m.topic_id,
  dm_room_id: m.dm_room_id,
  sender_type: m.sender_type,
  sender_id: m.sender_id,
  bot_id: m.bot_id,
  content: m.content,
  content_html: m.content_html,
  actions: readActions(m.actions),
  created_at: m.created_at,
  edited_at: m.edited_at,
  deleted_at: m.deleted_at,
});

export const TaskView = z.object({
  task_id: z.string(),
  id: z.string(),
  org_id: z.string(),
  topic_id: z.string(),
  title: z.string(),
  description: z.string(),
  priority: z.string(),
  status: z.string(),
  assignee_id: z.string().nullable(),
  due_date: z.string().nullable(),
  created_by_type: z.enum(['user', 'bot']),
  created_by_id: z.string(),
  created_at: ts,
  updated_at: ts,
});
export const taskView = (t: TaskRow): z.infer<typeof TaskView> => ({
  task_id: t.id,
  id: t.id,
  org_id: t.org_id,
  topic_id: t.topic_id,
  title: t.title,
  description: t.description,
  priority: t.priority,
  status: t.status,
  assignee_id: t.assignee_id,
  due_date: t.due_date,
  created_by_type: t.created_by_type,
  created_by_id: t.created_by_id,
  created_at: t.created_at,
  updated_at: t.updated_at,
});

export const BotView = z.object({
  bot_id: z.string(),
  id: z.string(),
  org_id: z.string(),
  type: z.enum(['system', 'platform', 'custom']),
  name: z.string(),
  description: z.string(),
  webhook_url: z.string().nullable(),
  events: z.array(z.string()),
  status: z.enum(['active', 'disabled']),
  builtin: z
    .string()
    .nullable()
    .describe('The built-in bot this is (search, tasks, …; one per organization), null for other bots'),
  created_by: z.string().nullable(),
  created_at: ts,
  updated_at: ts,
});
export type BotView = z.infer<typeof BotView>;
export const botView = (b: BotRow): BotView => ({
  bot_id: b.id,
  id: b.id,
  org_id: b.org_id,
  type: b.type,
  name: b.name,
  description: b.description,
  webhook_url: b.webhook_url,
  events: JSON.parse(b.events) as string[],
  status: b.status,
  builtin: b.builtin,
  created_by: b.created_by,
  created_at: b.created_at,
  updated_at: b.updated_at,
});

/** A key as listings show it: never the key itself, only its prefix. */
export const ApiKeyView = z.object({
  id: z.string(),
  bot_id: z.string(),
  key_prefix: z.string(),
  key_type: z.enum(['live', 'test']),
  scopes: z.array(z.string()).nullable().describe('null: the key reaches every tool'),
  expires_at: nullableTs,
  created_at: ts,
  last_used_at: nullableTs,
  use_count: z.number(),
  revoked_at: nullableTs,
  state: z.enum(['active', 'revoked', 'expired']),
  grants: KeyGrantsView.nullable().describe('null: no grants (the key reaches what its scopes allow)'),
  paused_at: nullableTs.describe(
    'when a guard rail or a manager paused the key (its calls answer 403 key_paused); null: not paused',
  ),
  paused_reason: z.string().nullable().describe('why the key was paused'),
});
export const apiKeyView = (k: BotApiKeyRow, now: string): z.infer<typeof ApiKeyView> => ({
  id: k.id,
  bot_id: k.bot_id,
  key_prefix: k.key_prefix,
  key_type: k.key_type,
  scopes: k.scopes === null ? null : (JSON.parse(k.scopes) as string[]),
  expires_at: k.expires_at,
  created_at: k.created_at,
  last_used_at: k.last_used_at,
  use_count: Number(k.use_count),
  revoked_at: k.revoked_at,
  state: k.revoked_at ? 'revoked' : k.expires_at !== null && k.expires_at <= now ? 'expired' : 'active',
  grants: k.grants === null || k.grants === undefined ? null : (JSON.parse(k.grants) as KeyGrants),
  paused_at: k.paused_at ?? null,
  paused_reason: k.paused_at ? (k.paused_reason ?? null) : null,
});

/** `{ items: [...] }`: every list answers an object, so that fields can be added later. */
export const listOf = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item) });
