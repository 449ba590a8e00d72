import { randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { AppError, invalid, notFound } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import { LIMITS } from '../../domain/limits.js';
import { hashSecret } from '../../domain/secrets.js';
import type { BotRow, IncomingWebhookRow } from '../../storage/schema.js';
import type { Stores } from '../../storage/stores/index.js';
import { isOrgAdmin, loadChannel, loadTopic } from '../access.js';
import type { Actor, BotActor, Services } from '../context.js';
import { sendMessage } from '../messages/messages.js';
import { defineOperation, runOperation } from '../operation.js';
import { checkBotQuota } from '../quotas.js';
import { limit, name, uuid } from '../schemas.js';
import { write } from '../write.js';
import { isSlackPayload, mentionIds, renderSlackPayload } from './slack-format.js';
import { parseTemplate, renderTemplate, TEMPLATE_MAX_CHARS, TemplateError } from './template.js';

/**
 * Slack-compatible incoming webhooks (issue 20, point 3; docs/WEBHOOKS.md): a URL per webhook that
 * carries its target container and its own secret, so that Grafana, Alertmanager, Sentry, Uptime Kuma,
 * GitLab… post to it as they post to "a Slack webhook URL". Created by an org admin or the container's
 * admin (the channel's creator; for a topic, its project's or its own creator), shown once, revocable.
 *
 * Each webhook posts as a bot of its own, made with it (named after the webhook and added to the channel
 * or the topic's project), so its messages go through the send-message operation like any bot's: the
 * same checks, the same message.created event, the sender shown by name. Revoking it disables that bot
 * and the URL answers 404 from then on.
 *
 * A request's body is read in one of three ways, in this order: the webhook's template, when it has one
 * (any JSON; template.ts); our own shape `{ "content", "content_html"? }`; Slack's payload (`text`,
 * `blocks`, `attachments`, `username`/`icon_emoji` where the webhook allows overrides; slack-format.ts).
 * Answers as Slack's do: `200 ok` as text, or a text error code (`invalid_payload`, `no_text`,
 * `no_service`, `channel_not_found`, `action_prohibited`).
 */

/** Form of the secret in a webhook's URL (256 random bits; the prefix lets secret scanners find it). */
export const HOOK_SECRET_RE = /^wrih_[0-9a-f]{64}$/;
const generateHookSecret = (): string => `wrih_${randomBytes(32).toString('hex')}`;

const hookUrl = (services: Services, id: string, secret: string) =>
  `${services.config.publicUrl}/api/incoming-webhooks/${id}/${secret}`;

const TemplateInput = z
  .string()
  .max(TEMPLATE_MAX_CHARS)
  .describe(
    'Template mode: turns any JSON body into the message ({{path}}, {{#each path}}…{{/each}}, {{#if path}}…{{else}}…{{/if}}; docs/WEBHOOKS.md)',
  );

export const IncomingWebhookView = z.object({
  id: z.string(),
  name: z.string(),
  channel_id: z.string().nullable(),
  topic_id: z.string().nullable(),
  bot_id: z.string().describe('The bot its messages are posted as'),
  template: z.string().nullable(),
  allow_overrides: z.boolean(),
  created_by: z.string(),
  created_at: z.string(),
  revoked_at: z.string().nullable(),
});
type IncomingWebhookView = z.infer<typeof IncomingWebhookView>;

const view = (r: IncomingWebhookRow): IncomingWebhookView => ({
  id: r.id,
  name: r.name,
  channel_id: r.channel_id,
  topic_id: r.topic_id,
  bot_id: r.bot_id,
  template: r.template,
  allow_overrides: r.allow_overrides === 1,
  created_by: r.created_by,
  created_at: r.created_at,
  revoked_at: r.revoked_at,
});

/**
 * Whether the actor administers the container: an org admin, or the channel's creator; for a topic, its
 * project's creator or its own. Not seeing it answers 404 (loadChannel/loadTopic); seeing it, 403.
 */
async function assertContainerAdmin(
  stores: Stores,
  actor: Actor,
  c: { channel_id: string | null; topic_id: string | null },
): Promise<{ orgId: string; membership: { kind: 'channel' | 'project'; id: string } }> {
  if (actor.kind !== 'user') throw new AppError('forbidden', 'Only users manage incoming webhooks');
  if (c.channel_id !== null) {
    const ch = await loadChannel(stores, actor, c.channel_id, 'read');
    if (!isOrgAdmin(actor, ch.org_id) && ch.created_by !== actor.userId) {
      throw new AppError(
        'forbidden',
        'Only an org admin or the channel’s creator manages its incoming webhooks',
      );
    }
    return { orgId: ch.org_id, membership: { kind: 'channel', id: ch.id } };
  }
  const topic = await loadTopic(stores, actor, c.topic_id!);
  const project = await stores.containers.getProject(topic.project_id);
  if (!project) throw notFound('Topic');
  const admin =
    isOrgAdmin(actor, topic.org_id) ||
    project.created_by === actor.userId ||
    topic.created_by === actor.userId;
  if (!admin) {
    throw new AppError(
      'forbidden',
      'Only an org admin or the creator of the topic or its project manages its incoming webhooks',
    );
  }
  return { orgId: topic.org_id, membership: { kind: 'project', id: project.id } };
}

export const CreateIncomingWebhookInput = z
  .strictObject({
    name,
    channel_id: uuid('channel').optional(),
    topic_id: uuid('topic').optional(),
    template: TemplateInput.optional(),
    allow_overrides: z
      .boolean()
      .default(false)
      .describe('Show a payload’s username and icon_emoji with its messages (Slack’s overrides)'),
  })
  .refine((v) => (v.channel_id === undefined) !== (v.topic_id === undefined), {
    message: 'give exactly one of channel_id or topic_id',
    path: ['channel_id'],
  });

export const createIncomingWebhook = defineOperation({
  name: 'incoming_webhooks.create',
  summary:
    'Create a Slack-compatible incoming webhook for a channel or a topic (org admins and the container’s admin). Its URL holds its secret and is shown only in this answer.',
  input: CreateIncomingWebhookInput,
  output: IncomingWebhookView.extend({
    url: z.string().describe('POST Slack’s incoming-webhook JSON here; shown only now'),
  }),
  actors: ['user'],
  async run(ctx, input) {
    const { actor } = ctx;
    if (input.template !== undefined) {
      try {
        parseTemplate(input.template);
      } catch (err) {
        if (err instanceof TemplateError) throw invalid('template', err.message);
        throw err;
      }
    }
    const target = { channel_id: input.channel_id ?? null, topic_id: input.topic_id ?? null };
    return write(ctx, async ({ stores, now, emit }) => {
      const { orgId, membership } = await assertContainerAdmin(stores, actor, target);
      const userId = actor.kind === 'user' ? actor.userId : '';
      await checkBotQuota(stores, ctx.services.config, orgId, userId);
      const id = newId();
      const bot: BotRow = {
        id: newId(),
        org_id: orgId,
        type: 'custom',
        name: input.name,
        description: `Posts what the incoming webhook ${input.name} receives`,
        webhook_url: null,
        events: '[]',
        created_by: userId,
        status: 'active',
        builtin: null,
        created_at: now,
        updated_at: now,
        deleted_at: null,
      };
      await stores.bots.insert(bot);
      const member = { type: 'bot' as const, id: bot.id };
      if (await stores.containers.addMember(membership.kind, membership.id, member, now)) {
        const joined = { member_type: 'bot' as const, member_id: bot.id, added_by: userId };
        emit(
          'member.joined',
          orgId,
          membership.kind === 'channel'
            ? { channel_id: membership.id, ...joined }
            : { project_id: membership.id, ...joined },
        );
      }
      const secret = generateHookSecret();
      const row: IncomingWebhookRow = {
        id,
        org_id: orgId,
        bot_id: bot.id,
        name: input.name,
        channel_id: target.channel_id,
        topic_id: target.topic_id,
        secret_hash: hashSecret(secret),
        template: input.template ?? null,
        allow_overrides: input.allow_overrides ? 1 : 0,
        created_by: userId,
        created_at: now,
        revoked_at: null,
      };
      await stores.incomingWebhooks.insert(row);
      return { ...view(row), url: hookUrl(ctx.services, id, secret) };
    });
  },
});

export const listIncomingWebhooks = defineOperation({
  name: 'incoming_webhooks.list',
  summary:
    'Incoming webhooks of your organization (org admins: all of them; others: those they created), newest first, never their URLs',
  input: z.strictObject({
    include_revoked: z
      .union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')])
      .default(false),
    limit: limit(100, 500),
  }),
  output: z.object({ items: z.array(IncomingWebhookView) }),
  actors: ['user'],
  async run(ctx, input) {
    const { actor } = ctx;
    if (actor.kind !== 'user') throw new AppError('forbidden', 'Only users manage incoming webhooks');
    const rows = await ctx.services.storage.stores.incomingWebhooks.list(actor.orgId, {
      createdBy: isOrgAdmin(actor, actor.orgId) ? undefined : actor.userId,
      includeRevoked: input.include_revoked,
      limit: input.limit,
    });
    return { items: rows.map(view) };
  },
});

export const revokeIncomingWebhook = defineOperation({
  name: 'incoming_webhooks.revoke',
  summary:
    'Revoke an incoming webhook (its creator, an org admin or the container’s admin): its URL answers 404 from then on and its bot is disabled',
  input: z.strictObject({ id: uuid('incoming webhook') }),
  output: IncomingWebhookView,
  actors: ['user'],
  async run(ctx, input) {
    const { actor } = ctx;
    return write(ctx, async ({ stores, now }) => {
      const row = await stores.incomingWebhooks.get(input.id);
      if (!row || row.org_id !== actor.orgId) throw notFound('Incoming webhook');
      if (!(actor.kind === 'user' && row.created_by === actor.userId)) {
        await assertContainerAdmin(stores, actor, row);
      }
      if (row.revoked_at === null) {
        await stores.incomingWebhooks.revoke(row.id, now);
        await stores.bots.update(row.bot_id, { status: 'disabled' }, now);
      }
      return view({ ...row, revoked_at: row.revoked_at ?? now });
    });
  },
});

// --- receiving ---

/** A refusal in Slack's form: a status and a text code as the body. */
export class HookRefusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
  ) {
    super(`${code}: ${detail}`);
  }
}

export interface HookAuth {
  hook: IncomingWebhookRow;
  actor: BotActor;
}

const sameHash = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * The webhook of a URL, before its body is read: unknown, revoked or a wrong secret all answer 404
 * `no_service` (as Slack's do), so a URL reveals nothing without its secret.
 */
export async function authenticateHook(services: Services, id: string, secret: string): Promise<HookAuth> {
  const none = new HookRefusal(404, 'no_service', 'No incoming webhook at this URL (revoked, or never was)');
  if (!z.uuid().safeParse(id).success || !HOOK_SECRET_RE.test(secret)) throw none;
  const hook = await services.storage.stores.incomingWebhooks.get(id);
  if (!hook || hook.revoked_at !== null || !sameHash(hook.secret_hash, hashSecret(secret))) throw none;
  // Its bot disabled or deleted (by its managers): the webhook posts nothing either.
  const bot = await services.storage.stores.bots.get(hook.bot_id);
  if (!bot || bot.status !== 'active' || bot.deleted_at !== null) throw none;
  return {
    hook,
    actor: {
      kind: 'bot',
      botId: hook.bot_id,
      orgId: hook.org_id,
      botType: 'custom',
      // Not an API key: the rate-limit bucket of this webhook, shared by all its requests.
      keyId: `incoming-webhook:${hook.id}`,
      scopes: ['messages:write'],
    },
  };
}

const OUR_FIELDS = new Set(['content', 'content_html', 'username', 'icon_emoji', 'icon_url', 'channel']);

const clip = (s: string, max: number) => (s.length <= max ? s : `${s.slice(0, max - 1)}…`);

/** The message a body renders to, by the webhook's mode. */
async function messageOf(
  services: Services,
  hook: IncomingWebhookRow,
  body: unknown,
): Promise<{ content: string; content_html?: string }> {
  if (hook.template !== null) {
    const content = renderTemplate(parseTemplate(hook.template), body);
    if (!content) throw new HookRefusal(400, 'no_text', 'The template rendered nothing for this body');
    return { content: clip(content, LIMITS.messageContent) };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new HookRefusal(400, 'invalid_payload', 'The body must be a JSON object');
  }
  const p = body as Record<string, unknown>;
  if ('content' in p) {
    const unknown = Object.keys(p).find((k) => !OUR_FIELDS.has(k));
    if (unknown !== undefined) throw new HookRefusal(400, 'invalid_payload', `${unknown}: unknown field`);
    if (typeof p.content !== 'string' || p.content.trim() === '') {
      throw new HookRefusal(400, 'no_text', 'content must be a non-empty string');
    }
    if (p.content_html !== undefined && typeof p.content_html !== 'string') {
      throw new HookRefusal(400, 'invalid_payload', 'content_html must be a string');
    }
    return p.content_html === undefined
      ? { content: p.content }
      : { content: p.content, content_html: p.content_html };
  }
  if (!isSlackPayload(p)) {
    throw new HookRefusal(400, 'no_text', 'No text, blocks or attachments (nor content) in the payload');
  }
  const names = new Map<string, string>();
  for (const id of mentionIds(p)) {
    if (!z.uuid().safeParse(id).success) continue;
    const u = await services.storage.stores.users.get(id);
    if (u && u.org_id === hook.org_id) names.set(id, u.display_name);
  }
  const content = renderSlackPayload(p, { names, overrides: hook.allow_overrides === 1 });
  if (!content) throw new HookRefusal(400, 'no_text', 'The payload has nothing to show');
  return { content: clip(content, LIMITS.messageContent) };
}

/** Posts what the body renders to as the webhook's bot; answers Slack's `ok`, or throws a HookRefusal. */
export async function postToHook(
  services: Services,
  auth: HookAuth,
  body: unknown,
  requestId: string,
): Promise<{ messageId: string }> {
  const message = await messageOf(services, auth.hook, body);
  const target =
    auth.hook.channel_id !== null ? { channel_id: auth.hook.channel_id } : { topic_id: auth.hook.topic_id! };
  try {
    const posted = await runOperation(
      sendMessage,
      { actor: auth.actor, services, requestId },
      { ...message, ...target },
    );
    return { messageId: posted.id };
  } catch (err) {
    if (err instanceof AppError) {
      if (err.code === 'not_found')
        throw new HookRefusal(
          404,
          'channel_not_found',
          'The webhook’s channel or topic is gone, or its bot was removed from it',
        );
      if (err.code === 'forbidden' || err.code === 'insufficient_scope')
        throw new HookRefusal(403, 'action_prohibited', err.message);
      if (err.code === 'invalid_input') throw new HookRefusal(400, 'invalid_payload', err.message);
    }
    throw err;
  }
}
