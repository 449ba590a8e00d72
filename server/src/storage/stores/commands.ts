import type { BotCommandRow } from '../schema.js';
import type { Executor } from './executor.js';

/** A custom command together with the bot that registered it. */
export type CommandWithBot = BotCommandRow & {
  bot_name: string;
  bot_type: string;
  /** The built-in bot's key, or null for a bot registered through the API. */
  bot_builtin: string | null;
};

/** Custom (slash) commands registered by bots. */
export class CommandStore {
  constructor(private readonly db: Executor) {}

  async insert(row: BotCommandRow): Promise<void> {
    await this.db.insertInto('bot_commands').values(row).execute();
  }

  listForBot(botId: string): Promise<BotCommandRow[]> {
    return this.db
      .selectFrom('bot_commands')
      .selectAll()
      .where('bot_id', '=', botId)
      .orderBy('command')
      .execute();
  }

  get(botId: string, command: string): Promise<BotCommandRow | undefined> {
    return this.db
      .selectFrom('bot_commands')
      .selectAll()
      .where('bot_id', '=', botId)
      .where('command', '=', command)
      .executeTakeFirst();
  }

  async delete(botId: string, command: string): Promise<boolean> {
    const res = await this.db
      .deleteFrom('bot_commands')
      .where('bot_id', '=', botId)
      .where('command', '=', command)
      .executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  async update(id: string, patch: Pick<BotCommandRow, 'description' | 'usage_hint'>, now: string) {
    await this.db
      .updateTable('bot_commands')
      .set({ ...patch, updated_at: now })
      .where('id', '=', id)
      .execute();
  }

  /** The disabled built-in bots of an organization that have this command (to say why it is unavailable). */
  listDisabledBuiltin(orgId: string, command: string): Promise<{ bot_id: string; bot_name: string }[]> {
    return this.db
      .selectFrom('bot_commands')
      .innerJoin('bots', 'bots.id', 'bot_commands.bot_id')
      .select(['bots.id as bot_id', 'bots.name as bot_name'])
      .where('bots.org_id', '=', orgId)
      .where('bots.builtin', 'is not', null)
      .where('bots.deleted_at', 'is', null)
      .where('bots.status', '=', 'disabled')
      .where('bot_commands.command', '=', command)
      .execute();
  }

  /**
   * Commands of the active bots usable in an organization (its own bots, built-in ones included, and
   * platform bots registered through the API), optionally only those named `command`.
   */
  listAvailable(orgId: string, command?: string): Promise<CommandWithBot[]> {
    let q = this.db
      .selectFrom('bot_commands')
      .innerJoin('bots', 'bots.id', 'bot_commands.bot_id')
      .selectAll('bot_commands')
      .select(['bots.name as bot_name', 'bots.type as bot_type', 'bots.builtin as bot_builtin'])
      .where('bots.deleted_at', 'is', null)
      .where('bots.status', '=', 'active')
      .where((eb) =>
        eb.or([
          eb('bots.org_id', '=', orgId),
          eb.and([eb('bots.type', '=', 'platform'), eb('bots.builtin', 'is', null)]),
        ]),
      );
    if (command !== undefined) q = q.where('bot_commands.command', '=', command);
    return q
      .orderBy('bot_commands.command')
      .orderBy('bots.name')
      .orderBy('bot_commands.id')
      .limit(1000)
      .execute();
  }
}
