import { isAppError } from '../../domain/errors.js';
import { deleteBotData, getBotData, listBotData, putBotData } from '../../operations/bots/data.js';
import type { BotContext } from '../types.js';

/**
 * A platform bot's state, kept as its own bot data documents (operations/bots/data.ts: versioned JSON
 * of at most 64 KB per key, 10,000 keys per bot and organization), through the same operations a
 * custom bot uses. `update` is a compare-and-set loop, so a command, a delivery and a job changing the
 * same document at once never lose each other's change.
 */

export interface Doc<T> {
  value: T;
  version: number;
}

/** What `update`'s function answers: the new value, `undefined` to leave it as it is, `null` to delete. */
export type Change<T> = T | undefined | null;

const isConflict = (e: unknown) => isAppError(e) && e.code === 'conflict';
const isNotFound = (e: unknown) => isAppError(e) && e.code === 'not_found';

export class BotData {
  constructor(private readonly ctx: BotContext) {}

  async get<T>(key: string): Promise<Doc<T> | null> {
    try {
      const r = await this.ctx.call(getBotData, { bot_id: this.ctx.bot.id, key });
      return { value: r.value as T, version: r.version };
    } catch (e) {
      if (isNotFound(e)) return null;
      throw e;
    }
  }

  /** Writes a value; with `ifVersion` only at that version (0: only if absent), else conflict. */
  async put<T>(key: string, value: T, ifVersion?: number): Promise<Doc<T>> {
    const r = await this.ctx.call(putBotData, {
      bot_id: this.ctx.bot.id,
      key,
      value,
      ...(ifVersion !== undefined && { if_version: ifVersion }),
    });
    return { value: r.value as T, version: r.version };
  }

  /** Creates the document if absent; answers the stored one either way (first writer wins). */
  async create<T>(key: string, value: T): Promise<{ doc: Doc<T>; created: boolean }> {
    for (let round = 0; round < 5; round++) {
      const existing = await this.get<T>(key);
      if (existing) return { doc: existing, created: false };
      try {
        return { doc: await this.put(key, value, 0), created: true };
      } catch (e) {
        if (!isConflict(e)) throw e;
      }
    }
    throw new Error(`bot data ${key}: could not create (changed concurrently)`);
  }

  /**
   * Reads, changes and writes back with compare-and-set, again from the top when someone else wrote
   * in between. `fn` must be a pure function of the value it gets (it may run several times).
   * Answers the value as stored afterwards (null when absent or deleted).
   */
  async update<T>(key: string, fn: (current: T | null) => Change<T>, attempts = 8): Promise<T | null> {
    for (let round = 0; round < attempts; round++) {
      const cur = await this.get<T>(key);
      const next = fn(cur ? structuredClone(cur.value) : null);
      if (next === undefined) return cur?.value ?? null;
      try {
        if (next === null) {
          if (cur)
            await this.ctx.call(deleteBotData, { bot_id: this.ctx.bot.id, key, if_version: cur.version });
          return null;
        }
        return (await this.put(key, next, cur?.version ?? 0)).value;
      } catch (e) {
        if (!isConflict(e) && !(next === null && isNotFound(e))) throw e;
      }
      // Someone wrote between our read and write: a short random pause, then read again.
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * (round + 1)));
    }
    throw new Error(`bot data ${key}: too many concurrent changes`);
  }

  async delete(key: string): Promise<void> {
    try {
      await this.ctx.call(deleteBotData, { bot_id: this.ctx.bot.id, key });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  /** Every document under a prefix, in key order, at most `max`. */
  async list<T>(prefix: string, max = 1000): Promise<{ key: string; value: T; version: number }[]> {
    const out: { key: string; value: T; version: number }[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.ctx.call(listBotData, {
        bot_id: this.ctx.bot.id,
        prefix,
        limit: Math.min(100, max - out.length),
        ...(cursor !== undefined && { cursor }),
      });
      for (const it of page.items) out.push({ key: it.key, value: it.value as T, version: it.version });
      cursor = page.next_cursor ?? undefined;
    } while (cursor && out.length < max);
    return out;
  }
}
