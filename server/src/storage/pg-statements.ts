import { createHash } from 'node:crypto';
import pg from 'pg';

/**
 * Named (server-side prepared) statements on PostgreSQL for the hot SQL of `stores/prepared.ts`: each
 * pooled connection parses and plans such a statement once, then only binds and executes it. Kysely
 * sends every query unnamed, which PostgreSQL parses and plans again on every call.
 */
const NAMES = new Map<string, string>();

/** Registers SQL to run as a named statement (idempotent; the name is derived from the text). */
export function namePgStatement(sql: string): void {
  if (!NAMES.has(sql)) NAMES.set(sql, `wr_${createHash('sha1').update(sql).digest('hex').slice(0, 24)}`);
}

type Query = (...args: unknown[]) => unknown;
type TypeParser = (value: string) => unknown;
/** What `pg.Pool`'s `types` option holds (database.ts `pgTypes`). */
export interface PgTypes {
  getTypeParser(oid: number, format?: 'text' | 'binary'): TypeParser;
}

/** The result columns of a named statement: names, and the parser of each column's type. */
interface RowShape {
  names: string[];
  parsers: TypeParser[];
}
const NO_ROWS: RowShape = { names: [], parsers: [] };

/** The parts of pg's `Connection` (protocol writer) a query submits through; pg-cursor uses the same. */
interface PgConnection {
  parsedStatements: Record<string, string | undefined>;
  submittedNamedStatements: Record<string, string | undefined>;
  stream: { cork?: () => void; uncork?: () => void };
  parse(q: { text: string; name: string; types: unknown[] }): void;
  bind(c: {
    portal: string;
    statement: string;
    values: unknown[];
    valueMapper: (v: unknown) => unknown;
  }): void;
  describe(m: { type: 'P'; name: string }): void;
  execute(c: { portal: string; rows: number }): void;
  sync(): void;
  sendCopyFail(message: string): void;
}

interface RowDescription {
  fields: { name: string; dataTypeID: number; format: string }[];
}

/** pg's answer to `client.query`, as Kysely and pg-deferred-transaction read it. */
interface NamedResult {
  command: string;
  rowCount: number | null;
  rows: Record<string, unknown>[];
}

const COMMAND_TAG = /^([A-Za-z]+)(?: (\d+))?(?: (\d+))?/;

/**
 * node-postgres's conversion of a value for the wire (Dates, arrays, Buffers, objects as JSON), the one
 * its own Query binds with: `pg.utils` at run time, which @types/pg does not declare.
 */
const prepareValue = (pg as unknown as { utils: { prepareValue: (value: unknown) => unknown } }).utils
  .prepareValue;
if (typeof prepareValue !== 'function') throw new Error('pg.utils.prepareValue is missing: pg changed');

/**
 * One execution of a named statement, as a pg "submittable" (the documented extension point that
 * pg-cursor and pg-query-stream use): bind and execute, with parse only the first time on a connection
 * and describe only until the connection knows the statement's columns. It replaces pg's own `Query`
 * on the hot path, whose per-call costs a profile of POST on PostgreSQL showed (bench/notes/
 * post-pg-profile.md, 2026-12-01): the query config copied with property descriptors (2.4 % of the
 * server's busy time), the columns described and set up again for every call (`Result.addFields` 3.7 %,
 * building a null-prototype template) and rows copied from that template by spread, which leaves them
 * in dictionary mode for every reader after. Here a connection describes a statement once and rows are
 * plain objects that all share one shape.
 *
 * The answer is the same as pg's: `{ command, rowCount, rows }`, columns parsed by the pool's types,
 * a later column of the same name replacing an earlier one, errors from PostgreSQL as pg's
 * `DatabaseError` (they come through the client unchanged).
 */
class NamedStatementQuery {
  readonly rows: Record<string, unknown>[] = [];
  command = '';
  rowCount: number | null = null;
  #shape: RowShape | undefined;
  #described = false;
  /** An error to answer at ReadyForQuery: a value pg could not send, or a row that did not parse. */
  #failure: unknown;
  #answered = false;

  constructor(
    readonly name: string,
    readonly text: string,
    readonly values: unknown[],
    private readonly shapes: Map<string, RowShape>,
    private readonly types: PgTypes,
    public callback: (err: unknown, result?: NamedResult) => void,
  ) {
    this.#shape = shapes.get(name);
  }

  submit(connection: PgConnection): null {
    connection.stream.cork?.();
    try {
      if (
        connection.parsedStatements[this.name] === undefined &&
        connection.submittedNamedStatements[this.name] === undefined
      ) {
        connection.parse({ text: this.text, name: this.name, types: [] });
        connection.submittedNamedStatements[this.name] = this.text;
        // A statement parsed again (after an error) is described again.
        this.#shape = undefined;
      }
      try {
        connection.bind({
          portal: '',
          statement: this.name,
          values: this.values,
          valueMapper: prepareValue,
        });
      } catch (err) {
        // A value pg cannot send: nothing is executed. The statement stays as it is (pg's Query closes
        // it here while its connection still counts it as parsed, so the next call of that statement
        // on the connection fails); the error is answered at the ReadyForQuery that the sync brings.
        this.#failure = err;
        connection.sync();
        return null;
      }
      if (this.#shape === undefined) {
        connection.describe({ type: 'P', name: '' });
        this.#described = true;
      }
      connection.execute({ portal: '', rows: 0 });
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleRowDescription(msg: RowDescription): void {
    const names = msg.fields.map((f) => f.name);
    const parsers = msg.fields.map((f) =>
      this.types.getTypeParser(f.dataTypeID, f.format === 'binary' ? 'binary' : 'text'),
    );
    this.#shape = { names, parsers };
  }

  handleDataRow(msg: { fields: (string | null)[] }): void {
    if (this.#failure !== undefined) return;
    const shape = this.#shape;
    if (shape === undefined) {
      this.#failure = new Error(`rows without a description for statement ${this.name}`);
      return;
    }
    const row: Record<string, unknown> = {};
    const { names, parsers } = shape;
    const fields = msg.fields;
    try {
      for (let i = 0; i < fields.length; i++) {
        const raw = fields[i];
        row[names[i]!] = raw === null || raw === undefined ? null : parsers[i]!(raw);
      }
    } catch (err) {
      this.#failure = err;
      return;
    }
    this.rows.push(row);
  }

  handleCommandComplete(msg: { text: string }): void {
    const m = COMMAND_TAG.exec(msg.text);
    if (m) {
      this.command = m[1]!;
      const count = m[3] ?? m[2];
      if (count !== undefined) this.rowCount = Number(count);
    }
    // Described and answered with no columns (an INSERT without RETURNING): remember that too.
    if (this.#described && this.#shape === undefined) this.#shape = NO_ROWS;
  }

  handleEmptyQuery(): void {}

  handlePortalSuspended(): void {}

  handleCopyInResponse(connection: PgConnection): void {
    connection.sendCopyFail('No source stream defined');
  }

  handleCopyData(): void {}

  handleError(err: unknown): void {
    // The statement may have failed because its columns changed: describe it again next time.
    this.shapes.delete(this.name);
    this.#answer(err);
  }

  /** Answers once: an error answered is not followed by the ReadyForQuery's result. */
  #answer(err: unknown, result?: NamedResult): void {
    if (this.#answered) return;
    this.#answered = true;
    this.callback(err, result);
  }

  handleReadyForQuery(): void {
    if (this.#failure !== undefined) {
      this.handleError(this.#failure);
      return;
    }
    if (this.#described && this.#shape !== undefined) this.shapes.set(this.name, this.#shape);
    this.#answer(null, { command: this.command, rowCount: this.rowCount, rows: this.rows });
  }
}

/** Makes the pool's clients run registered SQL as named statements (see `NamedStatementQuery`). */
export function useNamedStatements(pool: pg.Pool, types: PgTypes): void {
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as Query;
    // The columns of each statement this connection has described (a connection's statements are its own).
    const shapes = new Map<string, RowShape>();
    (client as unknown as { query: Query }).query = (text: unknown, values?: unknown, cb?: unknown) => {
      const name = typeof text === 'string' ? NAMES.get(text) : undefined;
      if (
        name === undefined ||
        (values !== undefined && !Array.isArray(values)) ||
        (cb !== undefined && typeof cb !== 'function')
      ) {
        return query(text, values, cb);
      }
      const run = (callback: (err: unknown, result?: NamedResult) => void) =>
        query(
          new NamedStatementQuery(
            name,
            text as string,
            (values as unknown[] | undefined) ?? [],
            shapes,
            types,
            callback,
          ),
        );
      // pg-pool's own `pool.query` passes a callback; Kysely awaits the promise.
      if (typeof cb === 'function') return void run(cb as (err: unknown, result?: NamedResult) => void);
      return new Promise<NamedResult>((resolve, reject) => {
        run((err, res) => (err === null ? resolve(res!) : reject(err as Error)));
      });
    };
  });
}
