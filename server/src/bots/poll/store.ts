import { isAppError } from '../../domain/errors.js';
import { deleteBotData, getBotData, listBotData, putBotData } from '../../operations/bots/data.js';
import type { BotContext } from '../types.js';

/**
 * The poll bot's documents, kept as bot data (docs/SCHEDULER.md "Bot data") through the same
 * operations a custom bot calls over REST: typed get, compare-and-set put, list by prefix, delete.
 */

export interface Doc<T> {
  value: T;
  version: number;
}

/** The document at `key`, or null when there is none. */
export async function getDoc<T>(ctx: BotContext, key: string): Promise<Doc<T> | null> {
  try {
    const r = await ctx.call(getBotData, { bot_id: ctx.bot.id, key });
    return { value: r.value as T, version: r.version };
  } catch (e) {
    if (isAppError(e) && e.code === 'not_found') return null;
    throw e;
  }
}

/**
 * Writes `value` if the document is still at `ifVersion` (0: does not exist yet). Returns the new
 * version, or null when another write came first (read again and retry).
 */
export async function putDoc<T>(
  ctx: BotContext,
  key: string,
  value: T,
  ifVersion: number,
): Promise<number | null> {
  try {
    const r = await ctx.call(putBotData, { bot_id: ctx.bot.id, key, value, if_version: ifVersion });
    return r.version;
  } catch (e) {
    if (isAppError(e) && e.code === 'conflict') return null;
    throw e;
  }
}

/** Every document whose key starts with `prefix`, in key order (all pages). */
export async function listDocs<T>(ctx: BotContext, prefix: string): Promise<{ key: string; value: T }[]> {
  const out: { key: string; value: T }[] = [];
  let cursor: string | undefined;
  do {
    const page = await ctx.call(listBotData, {
      bot_id: ctx.bot.id,
      prefix,
      limit: 100,
      ...(cursor !== undefined && { cursor }),
    });
    for (const item of page.items) out.push({ key: item.key, value: item.value as T });
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  return out;
}

/**
 * Deletes the document if it exists (with `ifVersion`: only if it is still at that version). Returns
 * whether this call deleted it.
 */
export async function deleteDoc(ctx: BotContext, key: string, ifVersion?: number): Promise<boolean> {
  try {
    await ctx.call(deleteBotData, {
      bot_id: ctx.bot.id,
      key,
      ...(ifVersion !== undefined && { if_version: ifVersion }),
    });
    return true;
  } catch (e) {
    if (isAppError(e) && (e.code === 'not_found' || (ifVersion !== undefined && e.code === 'conflict')))
      return false;
    throw e;
  }
}

/** Attempts of a compare-and-set loop before giving up (the delivery is then retried). */
export const CAS_ROUNDS = 25;

/**
 * Read-modify-write of one document with compare-and-set: `change` gets the current value (null when
 * absent) and returns the new one, or undefined to leave it. Retried when another write came first.
 * Returns the value written (or left) and whether it was written.
 */
export async function updateDoc<T>(
  ctx: BotContext,
  key: string,
  change: (current: T | null) => T | undefined,
): Promise<{ value: T | null; before: T | null; written: boolean }> {
  for (let round = 0; round < CAS_ROUNDS; round++) {
    const cur = await getDoc<T>(ctx, key);
    const next = change(cur?.value ?? null);
    if (next === undefined) return { value: cur?.value ?? null, before: cur?.value ?? null, written: false };
    if ((await putDoc(ctx, key, next, cur?.version ?? 0)) !== null) {
      return { value: next, before: cur?.value ?? null, written: true };
    }
  }
  throw new Error(`bot data ${key}: still changed concurrently after ${CAS_ROUNDS} attempts`);
}
