import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';

/** A database handle or an open transaction: stores work the same on either. */
export type Executor = Kysely<Database>;
