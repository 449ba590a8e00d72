import type { Generated } from 'kysely';

/**
 * Row types of every table, shared by SQLite and PostgreSQL. Portable choices:
 * ids are UUID text, timestamps ISO-8601 UTC text (fixed width, so they sort), booleans 0/1 integers,
 * lists and objects JSON text. Only migrations know about the dialect.
 */
export interface Database {
  organizations: OrganizationRow;
  departments: DepartmentRow;
  users: UserRow;
  user_tokens: UserTokenRow;
  channels: ChannelRow;
  channel_members: MemberRow & { channel_id: string };
  projects: ProjectRow;
  project_members: MemberRow & { project_id: string };
  topics: TopicRow;
  dm_rooms: DmRoomRow;
  dm_room_members: MemberRow & { dm_room_id: string };
  messages: MessageRow;
  tasks: TaskRow;
  tags: TagRow;
  bots: BotRow;
  bot_api_keys: BotApiKeyRow;
  bot_webhook_secrets: BotWebhookSecretRow;
  bot_incoming_tokens: BotIncomingTokenRow;
  bot_commands: BotCommandRow;
  bookmarks: BookmarkRow;
  files: FileRow;
  events: EventRow;
  event_dead_letters: EventDeadLetterRow;
  idempotency_keys: IdempotencyKeyRow;
  tool_calls: ToolCallRow;
  key_recent_texts: KeyRecentTextRow;
  outbox_cursors: OutboxCursorRow;
  webhook_deliveries: DeliveryRow;
  webhook_attempts: AttemptRow;
  webhook_health: WebhookHealthRow;
  incoming_webhooks: IncomingWebhookRow;
  bot_signing_keys: BotSigningKeyRow;
  notifications: NotificationRow;
  scheduled_jobs: ScheduledJobRow;
  bot_data: BotDataRow;
  read_markers: ReadMarkerRow;
  quota_usage: QuotaUsageRow;
  blobs: BlobRow;
  blob_chunks: BlobChunkRow;
  cluster_settings: ClusterSettingRow;
  message_reactions: ReactionRow;
  pending_actions: PendingActionRow;
}

export interface OrganizationRow {
  id: string;
  name: string;
  created_at: string;
}

export interface DepartmentRow {
  id: string;
  org_id: string;
  name: string;
  created_at: string;
}

export interface UserRow {
  id: string;
  org_id: string;
  email: string; // stored lower-case; unique across the installation (it is the login)
  display_name: string;
  role: string;
  status: string;
  department_id: string | null;
  password_hash: string;
  created_at: string;
  updated_at: string;
}

export interface UserTokenRow {
  id: string;
  user_id: string;
  token_hash: string;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
}

export interface ChannelRow {
  id: string;
  org_id: string;
  name: string;
  description: string;
  is_private: number;
  created_by: string | null;
  created_at: string;
  updated_at: string;
  /** Set when archived (migration 0011): out of the listings, no new messages. */
  archived_at?: string | null;
}

/** channel_members, project_members, dm_room_members: a member is a user or a bot. */
export interface MemberRow {
  member_type: 'user' | 'bot';
  member_id: string;
  joined_at: string;
}

export interface ProjectRow {
  id: string;
  org_id: string;
  name: string;
  description: string;
  created_by: string | null;
  created_at: string;
  updated_at: string;
  /** Set when archived (migration 0011): out of the listings, no new messages. */
  archived_at?: string | null;
}

export interface TopicRow {
  id: string;
  org_id: string;
  project_id: string;
  name: string;
  created_by: string | null;
  created_at: string;
  updated_at: string;
  /** Set when archived (migration 0011): out of the listings, no new messages. */
  archived_at?: string | null;
}

export interface DmRoomRow {
  id: string;
  org_id: string;
  /** Sorted member keys ("user:<id>,bot:<id>") so that a DM between the same members is reused. */
  member_key: string;
  created_at: string;
}

export interface MessageRow {
  id: string;
  org_id: string;
  channel_id: string | null;
  topic_id: string | null;
  dm_room_id: string | null;
  sender_type: 'user' | 'bot';
  sender_id: string;
  bot_id: string | null;
  content: string;
  content_html: string | null;
  /** JSON array of interactive actions (buttons, selects) a bot's message carries; null for none. */
  actions: string | null;
  created_at: string;
  edited_at: string | null;
  deleted_at: string | null;
}

export interface TaskRow {
  id: string;
  org_id: string;
  topic_id: string;
  title: string;
  description: string;
  priority: string;
  status: string;
  assignee_id: string | null;
  due_date: string | null;
  created_by_type: 'user' | 'bot';
  created_by_id: string;
  created_at: string;
  updated_at: string;
}

export interface TagRow {
  id: string;
  org_id: string;
  name: string;
  created_at: string;
}

export interface BotRow {
  id: string;
  /** The organization the bot belongs to and acts in. */
  org_id: string;
  type: 'system' | 'platform' | 'custom';
  name: string;
  description: string;
  webhook_url: string | null;
  /** JSON array of subscribed event types. */
  events: string;
  created_by: string | null;
  status: 'active' | 'disabled';
  /** Which built-in bot this row is (system and platform bots: one row per organization), else null. */
  builtin: string | null;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export interface BotApiKeyRow {
  id: string;
  bot_id: string;
  key_hash: string;
  key_prefix: string;
  key_type: 'live' | 'test';
  /** JSON array, or null for "all scopes". */
  scopes: string | null;
  expires_at: string | null;
  created_by: string | null;
  created_at: string;
  last_used_at: string | null;
  use_count: number;
  revoked_at: string | null;
  /** JSON of the key's grants (domain/grants.ts), or null: none (migration 0019). */
  grants: string | null;
  /** When a guard rail (or a manager) paused the key, and why; null: not paused (migration 0021). */
  paused_at?: string | null;
  paused_reason?: string | null;
}

export interface BotWebhookSecretRow {
  bot_id: string;
  secret_encrypted: string;
  created_at: string;
}

/** The incoming-webhook token of a bot: its SHA-256 only (migration 0003). */
export interface BotIncomingTokenRow {
  bot_id: string;
  token_hash: string;
  created_by: string;
  created_at: string;
}

export interface BotCommandRow {
  id: string;
  bot_id: string;
  org_id: string;
  command: string;
  description: string;
  usage_hint: string | null;
  created_at: string;
  updated_at: string;
}

export interface BookmarkRow {
  id: string;
  org_id: string;
  user_id: string;
  channel_id: string;
  message_id: string;
  created_at: string;
}

export interface FileRow {
  id: string;
  org_id: string;
  channel_id: string | null;
  topic_id: string | null;
  dm_room_id: string | null;
  uploader_type: 'user' | 'bot';
  uploader_id: string;
  filename: string;
  content_type: string;
  /** image, document, media, archive or other. */
  kind: string;
  size: number;
  sha256: string;
  storage_path: string;
  created_at: string;
  deleted_at: string | null;
}

/** Transactional outbox: written in the same transaction as the change it describes. */
export interface EventRow {
  seq: Generated<number>;
  id: string;
  org_id: string;
  type: string;
  data: string;
  created_at: string;
}

/** An outbox event whose data failed its schema on read (migration 0010; events/outbox-reader.ts). */
export interface EventDeadLetterRow {
  event_id: string;
  position: number;
  org_id: string;
  type: string;
  /** What did not match (paths and reasons, never values). */
  error: string;
  event_created_at: string;
  dead_at: string;
}

export interface IdempotencyKeyRow {
  /** actor kind + id + the client's Idempotency-Key */
  key: string;
  request_hash: string;
  /** 'pending' while the first request runs, then 'done'. */
  state: 'pending' | 'done';
  status_code: number | null;
  response: string | null;
  created_at: string;
}

/** Audit of MCP tools/call. */
export interface ToolCallRow {
  id: string;
  org_id: string;
  bot_id: string;
  key_id: string;
  tool: string;
  outcome: 'ok' | 'tool_error' | 'protocol_error';
  error_code: string | null;
  duration_ms: number;
  created_at: string;
  /** JSON: the grant decision, dry run, or a grant change's before/after (migration 0019). */
  detail: string | null;
}

/** The burst rule's window (migration 0021): a key's normalized text sent to a target, last at `at`. */
export interface KeyRecentTextRow {
  key_id: string;
  text_hash: string;
  target_id: string;
  at: string;
}

/** Durable position of an outbox consumer (the webhook fan-out). */
export interface OutboxCursorRow {
  name: string;
  position: number;
  updated_at: string;
}

/** One event for one bot's webhook; its id is the `webhook-id` of every attempt. */
export interface DeliveryRow {
  id: string;
  org_id: string;
  bot_id: string;
  event_id: string;
  /** The event's outbox row; null for events that are not in the outbox (webhook.test). */
  event_seq: number | null;
  event_position: number | null;
  event_type: string;
  event_created_at: string;
  /** JSON data of an event that is not in the outbox. */
  payload: string | null;
  state: 'pending' | 'delivered' | 'failed';
  /** Attempts made in the current round (a redelivery starts a new round). */
  attempts: number;
  /** When it is due; while a worker holds it, when that claim expires. */
  next_attempt_at: string;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

export interface AttemptRow {
  id: string;
  delivery_id: string;
  attempt: number;
  started_at: string;
  duration_ms: number;
  status: number | null;
  error: string | null;
  /** The first 1 KB of the receiver's answer. */
  response_snippet: string | null;
}

export interface WebhookHealthRow {
  bot_id: string;
  consecutive_failures: number;
  paused_at: string | null;
  paused_reason: string | null;
  updated_at: string;
  /** A pause until this time that the receiver asked for (Retry-After), migration 0012. */
  hold_until?: string | null;
  hold_reason?: string | null;
  /** The most deliveries a minute the bot's owner allows to its endpoint; null: no limit (0012). */
  max_per_minute?: number | null;
}

/** A bot's ed25519 webhook signing key (migration 0013): `whsk_` private key encrypted, `whpk_` public key. */
export interface BotSigningKeyRow {
  bot_id: string;
  private_key_encrypted: string;
  public_key: string;
  created_at: string;
}

/** A Slack-compatible incoming webhook (migration 0012; operations/webhooks/incoming-webhooks.ts). */
export interface IncomingWebhookRow {
  id: string;
  org_id: string;
  /** The bot its messages are posted as (made with the webhook). */
  bot_id: string;
  name: string;
  channel_id: string | null;
  topic_id: string | null;
  /** SHA-256 of the secret in its URL. */
  secret_hash: string;
  /** Template that turns any JSON body into the message (template mode); null: Slack's or our shape. */
  template: string | null;
  /** 1: a payload's `username` / `icon_emoji` are shown with the message. */
  allow_overrides: number;
  created_by: string;
  created_at: string;
  revoked_at: string | null;
}

export interface NotificationRow {
  id: string;
  org_id: string;
  user_id: string;
  kind: string;
  title: string;
  body: string;
  /** JSON object with the ids the notification is about. */
  data: string;
  created_at: string;
  read_at: string | null;
}

/** A job of the durable scheduler: run once at `run_at` by the bot that owns it. */
export interface ScheduledJobRow {
  id: string;
  org_id: string;
  bot_id: string;
  kind: string;
  /** At most one job per (bot, dedupe_key). */
  dedupe_key: string | null;
  /** JSON object. */
  payload: string;
  run_at: string;
  state: 'pending' | 'running' | 'done' | 'failed' | 'cancelled';
  attempts: number;
  lease_until: string | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
  done_at: string | null;
}

/** A bot's own small JSON document, versioned for compare-and-set. */
export interface BotDataRow {
  bot_id: string;
  key: string;
  org_id: string;
  /** JSON value. */
  value: string;
  version: number;
  created_at: string;
  updated_at: string;
}

/** How far a user has read a container. */
export interface ReadMarkerRow {
  user_id: string;
  container_type: 'channel' | 'topic' | 'dm_room';
  container_id: string;
  last_read_at: string;
  last_read_message_id: string | null;
  updated_at: string;
}

/** Bytes used per organization or user (operations/quotas.ts), changed with what they count. */
export interface QuotaUsageRow {
  org_id: string;
  /** `upload_bytes`, `bot_data_bytes`, or `bots` (a row only locked, never counted). */
  kind: string;
  /** '' for the whole organization, `user:<id>` for one user. */
  subject: string;
  used: number;
}

/** An emoji reaction of a user or bot to a message (migration 0011). */
export interface ReactionRow {
  message_id: string;
  emoji: string;
  reactor_type: 'user' | 'bot';
  reactor_id: string;
  org_id: string;
  created_at: string;
}

/** A file's bytes in the database (migration 0014; storage/blobs-database.ts), keyed by its storage path. */
export interface BlobRow {
  key: string;
  /** The file it belongs to, set in the upload's transaction; null while the bytes stream in. */
  file_id: string | null;
  size: number;
  chunks: number;
  sha256: string | null;
  /** 1 once every chunk is written. */
  complete: number;
  created_at: string;
}

/** 256 KiB of a blob, numbered from 0. */
export interface BlobChunkRow {
  blob_key: string;
  seq: number;
  data: Buffer;
}

/** A setting every instance on the database shares (migration 0015; encryption-key.ts). */
export interface ClusterSettingRow {
  name: string;
  value: string;
  updated_at: string;
}

/** A tool call waiting for a human's approval (migration 0020; operations/approvals/). */
export interface PendingActionRow {
  id: string;
  org_id: string;
  bot_id: string;
  /** The API key that made the call (re-checked at execution). */
  key_id: string;
  /** The MCP tool, and the operation behind it that approval runs. */
  tool: string;
  operation: string;
  /** JSON: the call's input as parsed (canonical), run as is once approved. */
  input: string;
  /** JSON: what the call would give (its dry run's result), shown to approvers; null for reads. */
  preview: string | null;
  /** JSON array of user ids: the bot's owner and the grant's approvers (org admins decide too). */
  approvers: string;
  status: 'pending' | 'approved' | 'rejected' | 'expired' | 'executed' | 'failed';
  requested_at: string;
  expires_at: string;
  decided_by: string | null;
  decided_at: string | null;
  executed_at: string | null;
  /** JSON: the operation's result once executed. */
  result: string | null;
  /** Why it failed (status failed). */
  error: string | null;
  /** JSON [{user_id, message_id}]: the approvers' DM cards. */
  cards: string | null;
  /** Set once the cards show the outcome and the bot was told. */
  resolved_at: string | null;
}
