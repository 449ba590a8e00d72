import { sql } from 'kysely';
import type { Executor } from './stores/executor.js';

/** The keys of the buckets of a key's grants (operations/guardrails.ts), which refill over up to a day. */
export const GRANT_BUCKET_PREFIX = 'grant-';

/** What one round trip to a shared bucket gave: tokens granted (0 when refused) and tokens left in it. */
export interface SharedTake {
  granted: number;
  tokens: number;
}

/**
 * Rate-limit buckets every instance shares, in PostgreSQL (migration 0016): one row per key, changed
 * under its lock by `workroom_take_tokens`, one round trip per call. The lease logic in front of it
 * (domain/leased-rate-limiter.ts) keeps a hot key from costing a round trip per request.
 */
export class SharedRateBuckets {
  constructor(private readonly db: Executor) {}

  /**
   * Refills the bucket `key` to `nowMs`, gives back `giveBack` unused tokens, then takes `need` plus up
   * to `extra` more if `need` are there (nothing otherwise); `need` 0 takes nothing.
   */
  async take(
    key: string,
    perSecond: number,
    burst: number,
    need: number,
    extra: number,
    giveBack: number,
    nowMs: number,
  ): Promise<SharedTake> {
    const r = await sql<{ granted: number; tokens: number }>`select granted, tokens from workroom_take_tokens(
      ${key}, ${perSecond}::float8, ${burst}::float8, ${need}::float8, ${extra}::float8, ${giveBack}::float8,
      ${nowMs}::float8)`.execute(this.db);
    const row = r.rows[0];
    return { granted: Number(row?.granted ?? 0), tokens: Number(row?.tokens ?? 0) };
  }

  /**
   * Removes buckets untouched since `beforeMs`: full again by then at any rate the server uses (the
   * slowest, sign-in per address and account, refills in 5 minutes), so they behave as new ones —
   * except a key's grant buckets (`grant-…`: writes_per_day, the guard rails' windows of up to a day),
   * kept until a day after `beforeMs`: pruned earlier, a spent day's budget would be whole again.
   */
  async prune(beforeMs: number): Promise<number> {
    const r = await sql`delete from rate_limit_buckets where at_ms < ${beforeMs}
      and (key not like ${`${GRANT_BUCKET_PREFIX}%`} or at_ms < ${beforeMs - 86_400_000})`.execute(this.db);
    return Number(r.numAffectedRows ?? 0);
  }
}
