import { AppError, notFound } from '../../domain/errors.js';
import type { BotRow } from '../../storage/schema.js';
import type { Stores } from '../../storage/stores/index.js';
import type { Actor } from '../context.js';
import { loadVisibleBot } from './bots.js';

/**
 * The bot of `{botId}` on the endpoints a bot uses for its own things (scheduled jobs, bot data): only
 * the acting bot itself. Another bot of the caller's organization (or a platform bot) answers 403, a
 * bot the caller cannot see (another organization's, unknown) 404, like every other lookup.
 */
export async function loadOwnBot(stores: Stores, actor: Actor, botId: string, what: string): Promise<BotRow> {
  if (actor.kind !== 'bot') throw new AppError('forbidden', `${what} are only available to bots`);
  if (botId !== actor.botId) {
    await loadVisibleBot(stores, actor, botId); // 404 when not visible
    throw new AppError('forbidden', `A bot reaches only its own ${what}: botId is not the bot of this key`);
  }
  const bot = await stores.bots.get(botId);
  if (!bot) throw notFound('Bot');
  return bot;
}
