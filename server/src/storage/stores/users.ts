import type { Selectable } from 'kysely';
import type { UserRow, UserTokenRow } from '../schema.js';
import type { Executor } from './executor.js';
import type { PgLookupBatches } from '../pg-batches.js';
import { containsInsensitive } from './sql-helpers.js';
import { channelOfRow, channelSelections } from './containers.js';
import { prepared } from './prepared.js';

// On every user request: prepared once, not rebuilt. The expiry is compared by the caller of the
// store method, so that the query's arguments are the same on every call (and its result cacheable).
const TOKEN_COLUMNS = [
  'user_tokens.id as token_id',
  'user_tokens.expires_at',
  'users.id as user_id',
  'users.org_id',
  'users.role',
  'users.department_id',
  'users.status',
] as const;
const tokenQuery = (db: Executor, tokenHash: string) =>
  db
    .selectFrom('user_tokens')
    .innerJoin('users', 'users.id', 'user_tokens.user_id')
    .select(TOKEN_COLUMNS)
    .where('user_tokens.token_hash', '=', tokenHash)
    .where('user_tokens.revoked_at', 'is', null);
const findByToken = prepared(tokenQuery);
/** findByToken with a channel and the user's membership of it, in the same statement. */
const findByTokenWithChannel = prepared((db, tokenHash: string, channelId: string) =>
  tokenQuery(db, tokenHash)
    .leftJoin('channels', (j) => j.on('channels.id', '=', channelId))
    .select(channelSelections('user', 'users.id')),
);

/** A user with its department name resolved: the shape every read needs. */
export type UserWithDepartment = Selectable<UserRow> & { department: string | null };

export interface UserListFilter {
  orgId: string;
  department?: string | undefined;
  role?: string | undefined;
  query?: string | undefined;
  limit: number;
  offset?: number;
}

export class UserStore {
  constructor(
    private readonly db: Executor,
    private readonly lookups?: PgLookupBatches,
  ) {}

  private base() {
    return this.db
      .selectFrom('users')
      .leftJoin('departments', 'departments.id', 'users.department_id')
      .selectAll('users')
      .select('departments.name as department');
  }

  async create(row: UserRow): Promise<void> {
    await this.db.insertInto('users').values(row).execute();
  }

  get(id: string): Promise<UserWithDepartment | undefined> {
    return this.base().where('users.id', '=', id).executeTakeFirst();
  }

  getByEmail(email: string): Promise<UserWithDepartment | undefined> {
    return this.base().where('users.email', '=', email.toLowerCase()).executeTakeFirst();
  }

  list(f: UserListFilter): Promise<UserWithDepartment[]> {
    let q = this.base().where('users.org_id', '=', f.orgId);
    if (f.department) q = q.where(containsInsensitive('departments.name', f.department));
    if (f.role) q = q.where('users.role', '=', f.role);
    if (f.query) {
      const text = f.query;
      q = q.where((eb) =>
        eb.or([containsInsensitive('users.display_name', text), containsInsensitive('users.email', text)]),
      );
    }
    return q
      .orderBy('users.display_name')
      .orderBy('users.id')
      .limit(f.limit)
      .offset(f.offset ?? 0)
      .execute();
  }

  async update(
    id: string,
    patch: Partial<Pick<UserRow, 'display_name' | 'role' | 'status' | 'department_id' | 'password_hash'>>,
    now: string,
  ): Promise<void> {
    await this.db
      .updateTable('users')
      .set({ ...patch, updated_at: now })
      .where('id', '=', id)
      .execute();
  }

  async createToken(row: UserTokenRow): Promise<void> {
    await this.db.insertInto('user_tokens').values(row).execute();
  }

  /** The token's user, if the token exists, is not revoked, not expired, and the user is active. */
  /** The token's user, while the token is neither revoked nor expired at `now`. */
  async findByToken(tokenHash: string, now: string) {
    const row = (await findByToken(this.db, tokenHash)).rows[0];
    return row && row.expires_at > now ? row : undefined;
  }

  /**
   * findByToken and the channel `channelId` with whether the token's user is a member, read in one
   * statement (one snapshot, one round trip): the request path of a channel's messages. `token` is
   * findByToken's row; `channel` is undefined when no such channel exists.
   */
  async findByTokenWithChannel(tokenHash: string, now: string, channelId: string) {
    const row = (await findByTokenWithChannel.lookup(this.db, this.lookups, tokenHash, channelId))[0];
    if (!row || row.expires_at <= now) return undefined;
    // The row as read (its `ch_*` columns too: not copied on every request) and the channel from it.
    return { token: row, channel: channelOfRow(row) };
  }

  async revokeToken(tokenId: string, now: string): Promise<void> {
    await this.db.updateTable('user_tokens').set({ revoked_at: now }).where('id', '=', tokenId).execute();
  }

  async revokeAllTokens(userId: string, now: string): Promise<void> {
    await this.db
      .updateTable('user_tokens')
      .set({ revoked_at: now })
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .execute();
  }
}
