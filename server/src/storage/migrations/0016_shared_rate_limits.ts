import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../database.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- migrations work on untyped schema */
type Db = Kysely<any>;

/**
 * PostgreSQL: rate-limit buckets every instance shares (domain/leased-rate-limiter.ts). One row per key
 * (a bot API key, a user, a sign-in account or address): the tokens left when the row was last touched
 * and that moment (epoch ms of the instances' clocks). `workroom_take_tokens` refills, gives back what
 * an instance returns of its lease, then takes `need` plus up to `extra` more (the instance's next lease)
 * in one round trip, under the row's lock; `need` 0 only asks whether one token is there. SQLite keeps
 * its buckets in memory (one process per database).
 */
export async function up(db: Db, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  await db.schema
    .createTable('rate_limit_buckets')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('tokens', 'float8', (c) => c.notNull())
    .addColumn('at_ms', 'float8', (c) => c.notNull())
    .execute();
  await sql`
    create function workroom_take_tokens(
      k text, rate float8, burst float8, need float8, extra float8, give_back float8, now_ms float8
    ) returns table (granted float8, tokens float8)
    language plpgsql volatile as $fn$
    declare
      t float8;
      a float8;
    begin
      insert into rate_limit_buckets as b (key, tokens, at_ms) values (k, burst, now_ms)
        on conflict (key) do nothing;
      select b.tokens, b.at_ms into t, a from rate_limit_buckets b where b.key = k for update;
      -- A clock behind the row's (another instance's) refills nothing and takes nothing back.
      t := least(burst, t + give_back + greatest(0, now_ms - a) / 1000 * rate);
      granted := 0;
      if need > 0 and t >= need then
        granted := need + least(extra, greatest(0, floor(t - need)));
        t := t - granted;
      end if;
      update rate_limit_buckets b set tokens = t, at_ms = greatest(a, now_ms) where b.key = k;
      tokens := t;
      return next;
    end
    $fn$`.execute(db);
}
