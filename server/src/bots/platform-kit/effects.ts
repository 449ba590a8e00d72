import { isAppError } from '../../domain/errors.js';
import { sendBotDm } from '../../operations/dm/bot-dm.js';
import { sendMessage } from '../../operations/messages/messages.js';
import { getUser } from '../../operations/users/users.js';
import type { MessageView } from '../../operations/views.js';
import type { BotContext } from '../types.js';

/**
 * Effects of the platform bots, each exactly once: every message the bots post or DM carries an
 * idempotency key naming the effect (e.g. `su:ask:<channel>:<date>:<user>:<question>`), derived from
 * what caused it (a job, an event, a command) and never from the clock. A re-run of a job after a
 * crash, a repeated delivery, or two triggers of the same effect answer the first message instead of
 * posting another. The input of a keyed call must be the same every time (the content is computed
 * from stored state, not from "now"): the same key with other input is refused by the platform.
 */

/** Idempotency keys are at most 255 printable characters. */
export function effectKey(...parts: string[]): string {
  const key = parts.join(':');
  if (!/^[\x21-\x7e]{1,255}$/.test(key)) throw new Error(`bad effect key ${JSON.stringify(key)}`);
  return key;
}

/** Sends a DM to a user once per key; the message as first sent. */
export function dmOnce(ctx: BotContext, key: string, userId: string, content: string): Promise<MessageView> {
  return ctx.call(sendBotDm, { bot_id: ctx.bot.id, user_id: userId, content }, { idempotencyKey: key });
}

/** Posts a message in a channel once per key. */
export function postOnce(
  ctx: BotContext,
  key: string,
  channelId: string,
  content: string,
): Promise<MessageView> {
  return ctx.call(sendMessage, { channel_id: channelId, content }, { idempotencyKey: key });
}

/**
 * True when an error says that the key was used already with another input: the effect happened
 * (with content computed earlier), so it must not happen again. Not for "still being processed".
 */
export function alreadyDone(e: unknown): boolean {
  return isAppError(e) && e.code === 'idempotency_conflict' && /different request/.test(e.message);
}

/**
 * Display names of users, looked up as the bot (scope users:read) once per handler run; an unknown or
 * invisible user is "a former member".
 */
export class Names {
  readonly #cache = new Map<string, string>();
  constructor(private readonly ctx: BotContext) {}

  async user(id: string): Promise<string> {
    let n = this.#cache.get(id);
    if (n === undefined) {
      const u = await this.ctx.call(getUser, { user_id: id }).catch(() => null);
      n = u?.display_name ?? 'a former member';
      this.#cache.set(id, n);
    }
    return n;
  }

  async users(ids: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (const id of ids) out.set(id, await this.user(id));
    return out;
  }
}
