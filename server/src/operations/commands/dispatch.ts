import { z } from 'zod';
import type { Config } from '../../config/config.js';
import { OutboundClient, OutboundError } from '../../outbound/client.js';
import { signDelivery } from '../../outbound/sign.js';
import { AppError, isAppError } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import type { BotType } from '../../domain/roles.js';
import { imagePolicy, sanitizeMessageHtml } from '../../domain/sanitize.js';
import { webhookSecretOf } from '../bots/keys.js';
import { systemClock, type Clock } from '../../runtime/clock.js';
import type { BotActor, Services } from '../context.js';
import { sendMessage } from '../messages/messages.js';
import { runOperation } from '../operation.js';
import { content, contentHtml } from '../schemas.js';
import { ResponseTokens, type Invocation, type ResponseGrant } from './response-token.js';
import { signingKeyOf } from '../webhooks/signing-key.js';

/**
 * A bot's slash command, delivered at once: the signed command.invoked event is POSTed to the bot's
 * webhook while the user waits (one attempt, the webhook time-out), and a JSON answer with `content`
 * becomes the bot's reply. The bot may also answer later through the response URL (up to
 * MAX_RESPONSES times within 30 minutes) or with send_message.
 */

/** Pushes a message to one user's live connections (realtime/hub.ts); how many received it. */
export interface UserPush {
  pushToUser(userId: string, message: Record<string, unknown>): number;
  /** Which of the users have a live connection (to any instance on the database). */
  onlineAmong?(userIds: readonly string[]): Promise<Set<string>>;
}

export const MAX_RESPONSES = 5;
/** A bot's answer may carry a full message (50,000 characters, HTML too), not more. */
const MAX_ANSWER_BYTES = 512 * 1024;

export const CommandReply = z.object({
  content,
  content_html: contentHtml.optional(),
  ephemeral: z.boolean({ message: 'must be true or false' }).optional(),
});
export type CommandReply = z.infer<typeof CommandReply>;

export const DeliveryView = z.object({
  status: z
    .enum(['delivered', 'no_webhook', 'no_secret', 'failed', 'timeout'])
    .describe('delivered: the bot answered 2xx; the others say why the bot did not get the command now'),
  http_status: z.number().int().nullable(),
  duration_ms: z.number().nullable(),
  message: z.string(),
});
export const ReplyView = z.object({
  ephemeral: z.boolean().describe('Shown only to the invoking user (pushed to their live connections)'),
  content: z.string(),
  content_html: z.string().nullable(),
  message_id: z.string().nullable().describe('The posted message (null when ephemeral)'),
  delivered_to: z.number().int().nullable().describe('Live connections that got an ephemeral reply'),
});
export type ReplyView = z.infer<typeof ReplyView>;

/** A built-in bot's command as its code receives it (the command.invoked event's data, typed). */
export interface BuiltinCommand {
  invocation_id: string;
  command: string;
  args: string;
  text: string;
  bot_id: string;
  org_id: string;
  user_id: string;
  channel_id: string | null;
  topic_id: string | null;
  dm_room_id: string | null;
  invoked_at: string;
}

/**
 * Runs the commands of built-in bots in this process instead of POSTing them (their rows have
 * `builtin` set and no webhook). `bots/` implements it and app.ts hands it to the dispatcher, as
 * operations must not import bots. The answer is used exactly like a webhook's JSON answer.
 */
export interface InProcessCommandHandler {
  /** The reply of the built-in bot `builtin` (null: none). Throwing counts as a failed delivery. */
  run(builtin: string, command: BuiltinCommand): Promise<unknown>;
}

/**
 * Bots' sockets (transports/socket/hub.ts, docs/SOCKET.md): a bot with a socket open to this instance
 * gets its commands over it, and its ack's `response` is the reply (as a webhook's JSON answer is).
 */
export interface SocketCommands {
  connected(botId: string): boolean;
  /** No socket here, but another instance on the database holds one (PostgreSQL). */
  connectedElsewhere?(botId: string): boolean;
  command(envelope: SocketCommandEnvelope, timeoutMs: number): Promise<SocketCommandOutcome>;
}

/**
 * Commands for a bot whose socket is on another instance (operations/commands/forward.ts, wired by
 * app.ts on PostgreSQL): the outcome there, or `unclaimed` when no instance took the command.
 */
export interface CommandForwarding {
  forward(
    inv: Invocation,
    envelope: SocketCommandEnvelope,
    timeoutMs: number,
  ): Promise<DispatchResult | 'unclaimed'>;
}

/** A command as a socket frame carries it (the shape of delivery/socket.ts's SocketEnvelope). */
export interface SocketCommandEnvelope {
  event_type: string;
  event_id: string;
  timestamp: string;
  bot_id: string;
  data: unknown;
  delivery_id: string;
  attempt: number;
}

/** How it ended (the shape of delivery/socket.ts's SocketOutcome). */
export type SocketCommandOutcome =
  | { kind: 'acked'; response?: unknown }
  | { kind: 'nacked'; reason?: string }
  | { kind: 'closed' }
  | { kind: 'expired'; leaseMs: number }
  | { kind: 'cancelled' };

/** The long-lived part: the outbound client (keep-alive pools), token keys, the live push and use counts. */
export class CommandDispatcher {
  readonly tokens: ResponseTokens;
  readonly #client: OutboundClient;
  #push: UserPush = { pushToUser: () => 0 };
  #inProcess: InProcessCommandHandler | undefined;
  #sockets: SocketCommands | undefined;
  #forwarder: CommandForwarding | undefined;
  readonly #uses = new Map<string, { count: number; expiresAt: number }>();

  constructor(
    private readonly config: Config,
    encryptionKey: Buffer,
    /** Business time (runtime/clock.ts): response URLs' expiry. */
    private readonly clock: Clock = systemClock,
  ) {
    this.tokens = new ResponseTokens(encryptionKey, clock);
    this.#client = new OutboundClient({
      allowPrivate: config.webhooks.allowPrivateUrls,
      allowedRanges: config.webhooks.allowedRanges,
      timeoutMs: config.webhooks.timeoutMs,
      maxResponseBytes: MAX_ANSWER_BYTES,
    });
  }

  /** The realtime hub, once it exists (it is built after the services it uses). */
  usePush(push: UserPush): void {
    this.#push = push;
  }

  /** Which of the users are online: have a live connection to any instance (built-in bots' @here). */
  async onlineAmong(userIds: readonly string[]): Promise<Set<string>> {
    return (await this.#push.onlineAmong?.(userIds)) ?? new Set();
  }

  /** The built-in bots' command runner (bots/runtime.ts), wired by app.ts. */
  useInProcess(handler: InProcessCommandHandler): void {
    this.#inProcess = handler;
  }

  get inProcess(): InProcessCommandHandler | undefined {
    return this.#inProcess;
  }

  /** The bots' sockets (transports/socket/hub.ts), wired by app.ts. */
  useSockets(sockets: SocketCommands): void {
    this.#sockets = sockets;
  }

  get sockets(): SocketCommands | undefined {
    return this.#sockets;
  }

  /** Forwarding to the instance holding a bot's socket (operations/commands/forward.ts), by app.ts. */
  useForwarder(forwarder: CommandForwarding): void {
    this.#forwarder = forwarder;
  }

  get forwarder(): CommandForwarding | undefined {
    return this.#forwarder;
  }

  get timeoutMs(): number {
    return this.config.webhooks.timeoutMs;
  }

  pushToUser(userId: string, message: Record<string, unknown>): number {
    return this.#push.pushToUser(userId, message);
  }

  post(url: string, body: string, headers: Record<string, string>) {
    return this.#client.post(url, body, headers);
  }

  /** Counts one use of a response URL; false once it was used MAX_RESPONSES times (per instance). */
  claimUse(g: ResponseGrant, now = this.clock.now()): boolean {
    if (this.#uses.size > 10_000) {
      for (const [k, v] of this.#uses) if (v.expiresAt <= now) this.#uses.delete(k);
    }
    const u = this.#uses.get(g.invocationId) ?? { count: 0, expiresAt: g.expiresAt };
    if (u.count >= MAX_RESPONSES) return false;
    u.count++;
    this.#uses.set(g.invocationId, u);
    return true;
  }

  responsesLeft(invocationId: string): number {
    return MAX_RESPONSES - (this.#uses.get(invocationId)?.count ?? 0);
  }

  get publicUrl(): string {
    return this.config.publicUrl;
  }
}

export interface DispatchResult {
  delivery: z.infer<typeof DeliveryView>;
  reply: ReplyView | null;
  reply_error: string | null;
}

/** Sends the signed command.invoked event to the bot now and turns a JSON answer into its reply. */
export async function dispatchInvocation(
  services: Services,
  inv: Invocation,
  data: Record<string, unknown>,
  invokedAt: string,
): Promise<DispatchResult> {
  const none = (status: 'no_webhook' | 'no_secret', message: string): DispatchResult => ({
    delivery: { status, http_status: null, duration_ms: null, message },
    reply: null,
    reply_error: null,
  });
  const bot = await services.storage.stores.bots.get(inv.botId);
  if (bot?.builtin) return dispatchInProcess(services, inv, bot.builtin, data, invokedAt);
  // A bot's socket is preferred while it is connected (docs/SOCKET.md).
  const sockets = services.commands.sockets;
  if (bot && sockets?.connected(bot.id)) return dispatchSocket(services, sockets, inv, data, invokedAt);
  // On another instance: forwarded there (PostgreSQL); if none takes it, as for a bot without a socket.
  const forwarder = services.commands.forwarder;
  if (bot && forwarder && sockets?.connectedElsewhere?.(bot.id)) {
    const timeoutMs = services.commands.timeoutMs;
    const r = await forwarder.forward(inv, commandEnvelope(inv, data, invokedAt), timeoutMs);
    if (r !== 'unclaimed') return r;
  }
  if (!bot?.webhook_url) {
    return none('no_webhook', 'The bot has no webhook URL: the command was recorded (command.invoked) only');
  }
  let secret: string | null;
  try {
    secret = await webhookSecretOf(services, bot.id);
  } catch (err) {
    services.log.error({ err, botId: bot.id }, 'commands: the webhook secret cannot be decrypted');
    secret = null;
  }
  if (!secret) {
    return none(
      'no_secret',
      'The bot has no webhook signing secret, so nothing was sent; its manager creates one with POST /api/bots/{botId}/webhook-secret',
    );
  }
  const signed = signDelivery({
    secret,
    signingKey: await signingKeyOf(services, bot.id),
    webhookId: inv.invocationId,
    timestampSeconds: Math.floor(services.clock.now() / 1000),
    envelope: {
      event_type: 'command.invoked',
      timestamp: invokedAt,
      bot_id: bot.id,
      data,
      event_id: inv.invocationId,
    },
  });
  let answer;
  try {
    answer = await services.commands.post(bot.webhook_url, signed.body, signed.headers);
  } catch (err) {
    // Whatever went wrong on the way to the bot, the user gets an answer, not a server error.
    if (!(err instanceof OutboundError)) services.log.error({ err }, 'commands: delivery failed');
    const timeout = err instanceof OutboundError && err.kind === 'timeout';
    const why = err instanceof OutboundError ? err.message : 'internal error';
    return {
      delivery: {
        status: timeout ? 'timeout' : 'failed',
        http_status: null,
        duration_ms: null,
        message: `The bot's webhook could not be reached: ${why}`,
      },
      reply: null,
      reply_error: null,
    };
  }
  const ok = answer.status >= 200 && answer.status < 300;
  const delivery = {
    status: ok ? ('delivered' as const) : ('failed' as const),
    http_status: answer.status,
    duration_ms: Math.round(answer.durationMs),
    message: ok ? 'The bot received the command' : `The bot answered HTTP ${answer.status}`,
  };
  if (!ok || answer.body.trim() === '') return { delivery, reply: null, reply_error: null };
  const parsed = parseAnswer(answer.body);
  if (typeof parsed === 'string') return { delivery, reply: null, reply_error: parsed };
  if (parsed === null) return { delivery, reply: null, reply_error: null };
  try {
    return { delivery, reply: await postReply(services, inv, parsed), reply_error: null };
  } catch (err) {
    if (!isAppError(err)) throw err;
    return { delivery, reply: null, reply_error: `The bot's reply was not posted: ${err.message}` };
  }
}

/**
 * A built-in bot's command: run by its code in this process (no HTTP, no signature); its answer is a
 * reply exactly as a webhook's JSON answer would be (posted as the bot, or ephemeral).
 */
async function dispatchInProcess(
  services: Services,
  inv: Invocation,
  builtin: string,
  data: Record<string, unknown>,
  invokedAt: string,
): Promise<DispatchResult> {
  const handler = services.commands.inProcess;
  const failed = (message: string, durationMs: number | null): DispatchResult => ({
    delivery: { status: 'failed', http_status: null, duration_ms: durationMs, message },
    reply: null,
    reply_error: null,
  });
  if (!handler) return failed('The built-in bots are not running in this server', null);
  const t0 = performance.now();
  let answer: unknown;
  try {
    answer = await handler.run(builtin, {
      invocation_id: inv.invocationId,
      command: inv.command,
      args: typeof data.args === 'string' ? data.args : '',
      text: typeof data.text === 'string' ? data.text : `/${inv.command}`,
      bot_id: inv.botId,
      org_id: inv.orgId,
      user_id: inv.userId,
      channel_id: inv.channelId,
      topic_id: inv.topicId,
      dm_room_id: inv.dmRoomId,
      invoked_at: invokedAt,
    });
  } catch (err) {
    services.log.error({ err, builtin, invocation: inv.invocationId }, 'commands: a built-in bot failed');
    const why = isAppError(err) ? err.message : 'internal error';
    return failed(`The built-in bot failed: ${why}`, Math.round(performance.now() - t0));
  }
  const delivery = {
    status: 'delivered' as const,
    http_status: null,
    duration_ms: Math.round(performance.now() - t0),
    message: 'The built-in bot handled the command',
  };
  if (answer === null || answer === undefined) return { delivery, reply: null, reply_error: null };
  const r = CommandReply.safeParse(answer);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    return {
      delivery,
      reply: null,
      reply_error: `The bot's reply is invalid: ${issue.path.join('.')}: ${issue.message}`,
    };
  }
  try {
    return { delivery, reply: await postReply(services, inv, r.data), reply_error: null };
  } catch (err) {
    if (!isAppError(err)) throw err;
    return { delivery, reply: null, reply_error: `The bot's reply was not posted: ${err.message}` };
  }
}

/**
 * A command over the bot's socket: the command.invoked event as a socket frame (its delivery id is the
 * invocation id); the ack, within the webhook time-out, may carry the reply as `response`.
 */
async function dispatchSocket(
  services: Services,
  sockets: SocketCommands,
  inv: Invocation,
  data: Record<string, unknown>,
  invokedAt: string,
): Promise<DispatchResult> {
  const t0 = performance.now();
  const timeoutMs = services.commands.timeoutMs;
  const r = await sockets.command(commandEnvelope(inv, data, invokedAt), timeoutMs);
  return socketCommandResult(services, inv, r, Math.round(performance.now() - t0), timeoutMs);
}

function commandEnvelope(
  inv: Invocation,
  data: Record<string, unknown>,
  invokedAt: string,
): SocketCommandEnvelope {
  return {
    event_type: 'command.invoked',
    event_id: inv.invocationId,
    timestamp: invokedAt,
    bot_id: inv.botId,
    data,
    delivery_id: inv.invocationId,
    attempt: 1,
  };
}

/**
 * What a command's outcome over a socket means for the user; an ack's `response` is posted as the
 * bot's reply (by the instance that got the ack: forward.ts runs this on the holder).
 */
export async function socketCommandResult(
  services: Services,
  inv: Invocation,
  r: SocketCommandOutcome,
  duration_ms: number,
  timeoutMs: number,
): Promise<DispatchResult> {
  if (r.kind !== 'acked') {
    const message =
      r.kind === 'expired'
        ? `The bot did not acknowledge the command over its socket within ${timeoutMs} ms`
        : r.kind === 'nacked'
          ? `The bot refused the command${r.reason ? `: ${r.reason}` : ''}`
          : "The bot's socket closed before it acknowledged the command";
    return {
      delivery: {
        status: r.kind === 'expired' ? 'timeout' : 'failed',
        http_status: null,
        duration_ms,
        message,
      },
      reply: null,
      reply_error: null,
    };
  }
  const delivery = {
    status: 'delivered' as const,
    http_status: null,
    duration_ms,
    message: 'The bot received the command over its socket',
  };
  if (r.response === undefined || r.response === null) return { delivery, reply: null, reply_error: null };
  const text = JSON.stringify(r.response);
  if (Buffer.byteLength(text) > MAX_ANSWER_BYTES)
    return { delivery, reply: null, reply_error: 'The bot answered invalid or over-long JSON' };
  const parsed = parseAnswer(text);
  if (typeof parsed === 'string') return { delivery, reply: null, reply_error: parsed };
  if (parsed === null) return { delivery, reply: null, reply_error: null };
  try {
    return { delivery, reply: await postReply(services, inv, parsed), reply_error: null };
  } catch (err) {
    if (!isAppError(err)) throw err;
    return { delivery, reply: null, reply_error: `The bot's reply was not posted: ${err.message}` };
  }
}

/** null: an answer without `content` (no reply); a string: why the answer is not a valid reply. */
function parseAnswer(text: string): CommandReply | null | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // A plain-text "ok" is an acknowledgement, not a reply.
    return text.trimStart().startsWith('{') ? 'The bot answered invalid or over-long JSON' : null;
  }
  if (typeof value !== 'object' || value === null || !('content' in value)) return null;
  const r = CommandReply.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  return `The bot's reply is invalid: ${issue.path.join('.')}: ${issue.message}`;
}

/**
 * Posts a reply as the bot: a message in the command's container through the send-message operation,
 * or, when ephemeral (or the command ran outside any container), a message pushed only to the invoking
 * user's live connections and stored nowhere.
 */
export async function postReply(
  services: Services,
  inv: Invocation,
  reply: CommandReply,
): Promise<ReplyView> {
  const bot = await services.storage.stores.bots.get(inv.botId);
  if (!bot || bot.deleted_at !== null || bot.status !== 'active') {
    throw new AppError('forbidden', 'The bot is disabled or deleted');
  }
  const place = { channel_id: inv.channelId, topic_id: inv.topicId, dm_room_id: inv.dmRoomId };
  if (reply.ephemeral === true || (!inv.channelId && !inv.topicId && !inv.dmRoomId)) {
    const html =
      reply.content_html === undefined
        ? null
        : sanitizeMessageHtml(reply.content_html, imagePolicy(services.config));
    const delivered = services.commands.pushToUser(inv.userId, {
      type: 'ephemeral',
      message: {
        id: newId(),
        invocation_id: inv.invocationId,
        command: inv.command,
        bot_id: bot.id,
        bot_name: bot.name,
        content: reply.content,
        content_html: html,
        ...place,
        created_at: services.clock.nowIso(),
      },
    });
    return {
      ephemeral: true,
      content: reply.content,
      content_html: html,
      message_id: null,
      delivered_to: delivered,
    };
  }
  // The bot acts in the organization where its command ran (a platform bot serves several).
  const actor: BotActor = {
    kind: 'bot',
    botId: bot.id,
    orgId: inv.orgId,
    botType: bot.type as BotType,
    keyId: `command:${inv.invocationId}`,
    scopes: null,
  };
  const input = {
    content: reply.content,
    ...(reply.content_html !== undefined && { content_html: reply.content_html }),
    ...(inv.channelId && { channel_id: inv.channelId }),
    ...(inv.topicId && { topic_id: inv.topicId }),
    ...(inv.dmRoomId && { dm_room_id: inv.dmRoomId }),
  };
  const m = await runOperation(
    sendMessage,
    { actor, services, requestId: `command:${inv.invocationId}` },
    input,
  );
  return {
    ephemeral: false,
    content: m.content,
    content_html: m.content_html,
    message_id: m.id,
    delivered_to: null,
  };
}
