import fc from 'fast-check';
import { readFileSync } from 'node:fs';

/**
 * Shared pieces of the fuzz suites (server/test/fuzz-*.test.ts): run settings with a fixed,
 * overridable seed, hostile strings, values generated from JSON schemas (valid-ish and wrong), and
 * the checks of the error shapes every answer must have.
 */

/** The seed of every fuzz run unless FUZZ_SEED says otherwise: failures replay exactly. */
export const DEFAULT_SEED = 20261123;

/**
 * fast-check parameters: FUZZ_SEED, FUZZ_PATH (the path fast-check prints with a failure) and
 * FUZZ_RUNS override the defaults. A failure prints the seed and path to replay it with.
 */
export function fuzzParameters(defaultRuns: number): { seed: number; numRuns: number; path?: string } {
  const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : DEFAULT_SEED;
  const numRuns = process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : defaultRuns;
  if (!Number.isInteger(seed) || !Number.isInteger(numRuns) || numRuns < 1)
    throw new Error('FUZZ_SEED and FUZZ_RUNS must be integers');
  return process.env.FUZZ_PATH ? { seed, numRuns, path: process.env.FUZZ_PATH } : { seed, numRuns };
}

/** How to replay a run: printed with every failure and at the end of each suite. */
export const replayHint = (file: string, p: { seed: number; numRuns: number }): string =>
  `FUZZ_SEED=${p.seed} FUZZ_RUNS=${p.numRuns} npx vitest run server/test/${file}` +
  ' (add FUZZ_PATH=<path from the failure> to replay one case)';

/** Strings that have broken servers before: NUL, lone surrogates, bidi controls, injections, numbers. */
export const NASTY_STRINGS: readonly string[] = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfff y',
  '\udc00\ud800',
  '\u202egnp.exe',
  'مرحبا بالعالم',
  'שלום',
  '👩‍👩‍👧‍👦🏳️‍🌈',
  '\u200b\u200c\u200d\ufeff',
  'e\u0301\u0301\u0301\u0301',
  '\r\n\r\nHTTP/1.1 200 OK',
  '\t\u000b\u000c\u001b[31m',
  '%00%ff%zz',
  '../../../../etc/passwd',
  "' OR '1'='1' --",
  '"; drop table users; --',
  '<script>alert(1)</script>',
  '${7*7}{{7*7}}',
  '__proto__',
  'constructor',
  'null',
  'undefined',
  'true',
  '0',
  '-1',
  '42',
  '1e309',
  '-0',
  '0x10',
  'NaN',
  'Infinity',
  '9007199254740993',
  '2026-02-30',
  '2026-11-23T25:61:00Z',
  '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  '0000000-0000-0000-0000-000000000000',
  '00000000-0000-0000-0000-00000000000g',
  '{00000000-0000-0000-0000-000000000000}',
  '#channel @user',
  '\\',
  '%',
];

/** Any UTF-16 code unit, lone surrogates included. */
const codeUnit = fc.nat(0xffff).map((c) => String.fromCharCode(c));

/** A short hostile string: NUL, lone surrogates, bidi, emoji, injections, numbers as text. */
export const nastyShort: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...NASTY_STRINGS), weight: 6 },
  { arbitrary: fc.string({ unit: codeUnit, maxLength: 40 }), weight: 3 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }), weight: 2 },
);

/** A string that is hostile in length (up to 300,000 characters, past the body limit as UTF-8), content or both. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: nastyShort, weight: 25 },
  {
    arbitrary: fc
      .tuple(
        fc.constantFrom('a', '\u0000', 'é', '😀', '\ud800'),
        fc.constantFrom(1_000, 10_001, 70_000, 300_000),
      )
      .map(([c, n]) => c.repeat(n)),
    weight: 1,
  },
);

/** Nested garbage: deep arrays/objects that stress recursive validators. */
export const deepNesting: fc.Arbitrary<unknown> = fc
  .tuple(fc.integer({ min: 50, max: 1500 }), fc.boolean())
  .map(([depth, arrays]) => {
    let v: unknown = 'bottom';
    for (let i = 0; i < depth; i++) v = arrays ? [v] : { a: v };
    return v;
  });

/** Any JSON value, small, including odd numbers and hostile strings. */
export const garbageValue: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 4 },
  { arbitrary: nastyString, weight: 3 },
  {
    arbitrary: fc.constantFrom(
      null,
      true,
      false,
      0,
      -1,
      1.5,
      -0.0001,
      1e308,
      -1e308,
      2 ** 53 + 2,
      [],
      {},
      [null],
      { __proto__: null, constructor: 1 },
    ),
    weight: 3,
  },
  { arbitrary: deepNesting, weight: 1 },
);

export type JsonSchema = Record<string, any>;

/** Where ids come from: an id generator per field name (see the REST and MCP suites). */
export interface IdSource {
  /** An id for a field named `name` (a local id, another organization's, a random or a broken one). */
  idFor(name: string): fc.Arbitrary<string>;
}

const UUID_LIKE = /format|pattern/;

function isIdField(name: string, s: JsonSchema): boolean {
  return (
    s.format === 'uuid' ||
    /(^id$|Id$|_id$)/.test(name) ||
    (UUID_LIKE.test(JSON.stringify(s)) && /id/i.test(name))
  );
}

const clampLen = (n: number | undefined, dflt: number) => Math.min(n ?? dflt, dflt);

/** A value that satisfies `schema` as far as a generator cheaply can (ids from `ids`). */
export function validFor(schema: JsonSchema, name: string, ids: IdSource, depth = 0): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  const alts = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (alts) return fc.oneof(...alts.map((a) => validFor(a, name, ids, depth)));
  if (Array.isArray(schema.type))
    return fc.oneof(
      ...(schema.type as string[]).map((t) => validFor({ ...schema, type: t }, name, ids, depth)),
    );
  switch (schema.type) {
    case 'string':
      if (isIdField(name, schema)) return ids.idFor(name);
      if (schema.format === 'email' || name === 'email')
        return fc.emailAddress().filter((e) => e.length <= (schema.maxLength ?? 320));
      if (schema.format === 'date' || /date$/.test(name))
        return fc
          .date({ min: new Date(2000, 0, 1), max: new Date(2100, 0, 1), noInvalidDate: true })
          .map((d) => d.toISOString().slice(0, 10));
      if (schema.format === 'date-time' || /^(before|after|from|to|since)$/.test(name))
        return fc
          .date({ min: new Date(2000, 0, 1), max: new Date(2100, 0, 1), noInvalidDate: true })
          .map((d) => d.toISOString());
      if (schema.format === 'uri' || /url$/.test(name))
        return fc.constantFrom('https://example.com/hook', 'https://example.test/x?y=1');
      {
        // Valid by length, hostile by content: NUL, lone surrogates, bidi, emoji reach the database.
        const min = schema.minLength ?? 0;
        const max = schema.maxLength ?? Infinity;
        return fc.oneof(
          {
            arbitrary: fc.string({
              minLength: min,
              maxLength: Math.max(min, clampLen(schema.maxLength, 30)),
            }),
            weight: 3,
          },
          { arbitrary: nastyShort.filter((x) => x.length >= min && x.length <= max), weight: 2 },
          {
            arbitrary: fc
              .tuple(
                fc.string({ maxLength: 5 }),
                fc.constantFrom('\u0000', '\ud800', '\u202e', '\u0000\u0000'),
              )
              .map(([a, bad]) => `${a}${bad}${a}x`)
              .filter((x) => x.length >= min && x.length <= max),
            weight: 1,
          },
        );
      }
    case 'integer':
    case 'number': {
      const min = Math.max(schema.minimum ?? -1000, -1e6);
      const max = Math.min(schema.maximum ?? 1000, 1e6);
      return schema.type === 'integer' ? fc.integer({ min, max }) : fc.double({ min, max, noNaN: true });
    }
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(validFor(schema.items ?? {}, name.replace(/s$/, ''), ids, depth + 1), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.max(schema.minItems ?? 0, clampLen(schema.maxItems, 4)),
      });
    case 'object':
      return depth > 3 ? fc.constant({}) : objectFor(schema, ids, depth + 1);
    default:
      return garbageValue;
  }
}

/** A value that breaks `schema`: wrong type, one past a bound, huge, hostile, or nested garbage. */
export function invalidFor(schema: JsonSchema, huge = true): fc.Arbitrary<unknown> {
  const out: fc.Arbitrary<unknown>[] = huge
    ? [garbageValue, nastyString]
    : [fc.jsonValue({ maxDepth: 2 }), nastyShort];
  if (schema.type === 'string' || (Array.isArray(schema.type) && schema.type.includes('string'))) {
    if (schema.maxLength !== undefined) {
      out.push(fc.constantFrom('x'.repeat(schema.maxLength + 1), 'é'.repeat(schema.maxLength)));
      out.push(fc.constant('😀'.repeat(schema.maxLength)));
    }
    if (schema.minLength) out.push(fc.constant('x'.repeat(schema.minLength - 1)));
    out.push(fc.constantFrom(12, true, ['x'], { x: 1 }));
  }
  if (schema.type === 'integer' || schema.type === 'number') {
    const b = [schema.minimum, schema.maximum].filter((x) => typeof x === 'number') as number[];
    out.push(
      fc.constantFrom(...b.flatMap((x) => [x - 1, x + 1, x + 0.5]), '5', '1e3', 0.1, -1, 2 ** 63, '', 'ten'),
    );
  }
  if (schema.type === 'array') {
    out.push(fc.constantFrom('not-an-array', { 0: 'x' }, [[]], [null, 1, {}]));
    if (schema.maxItems !== undefined)
      out.push(fc.constant(Array.from({ length: schema.maxItems + 1 }, () => 'x')));
  }
  return fc.oneof(...out);
}

const TARGET_FIELDS = ['channel_id', 'topic_id', 'dm_room_id'];

/** An object for an object schema: required fields mostly present, optional ones sometimes, extras rarely. */
export function objectFor(
  schema: JsonSchema,
  ids: IdSource,
  depth = 0,
): fc.Arbitrary<Record<string, unknown>> {
  const props = Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>);
  const required = new Set<string>((schema.required ?? []) as string[]);
  const fields = props.map(([name, s]) =>
    fc
      .tuple(
        fc.nat(99),
        fc.oneof(
          { arbitrary: validFor(s, name, ids, depth), weight: 6 },
          { arbitrary: invalidFor(s), weight: 2 },
        ),
      )
      .map(([roll, v]) => ({ name, v, keep: required.has(name) ? roll >= 5 : roll < 60 })),
  );
  const extras = fc.oneof(
    { arbitrary: fc.constant([] as [string, unknown][]), weight: 8 },
    {
      arbitrary: fc.array(fc.tuple(fc.oneof(nastyShort, fc.string()), garbageValue), { maxLength: 3 }),
      weight: 2,
    },
  );
  // "Exactly one of channel_id, topic_id, dm_room_id" (a rule the schemas cannot say): mostly kept.
  const targets = props.map(([n]) => n).filter((n) => TARGET_FIELDS.includes(n) && !required.has(n));
  const oneTarget =
    targets.length > 1 ? fc.option(fc.constantFrom(...targets), { freq: 5 }) : fc.constant(null);
  return fc.tuple(fc.tuple(...fields), extras, oneTarget).map(([fs, ex, only]) => {
    const o: Record<string, unknown> = {};
    for (const f of fs)
      if (only !== null && targets.includes(f.name) ? f.name === only : f.keep) o[f.name] = f.v;
    // defineProperty: "__proto__" stays an own key and is sent as such.
    for (const [k, v] of ex) Object.defineProperty(o, k, { value: v, enumerable: true, writable: true });
    return o;
  });
}

/** Percent-encodes every byte but the unreserved ones; lone surrogates become U+FFFD as UTF-8 does. */
export function percentEncode(s: string): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The documented error of decisions.md: `{ "error": { "code": <snake_case>, "message": <string> } }`. */
export function errorShapeProblem(body: unknown, codes: readonly string[]): string | undefined {
  const e = (body as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  if (!e || typeof e !== 'object') return 'the error body has no "error" object';
  if (typeof e.code !== 'string' || !/^[a-z]+(?:_[a-z]+)*$/.test(e.code))
    return 'error.code is not snake_case';
  if (!codes.includes(e.code)) return `error.code ${e.code} is not a documented code`;
  if (typeof e.message !== 'string' || e.message.length === 0) return 'error.message is not a string';
  return undefined;
}

/** JSON-RPC error codes an answer of ours may carry (the MCP spec's and the transport's refusals). */
export const RPC_CODES = new Set([-32700, -32600, -32601, -32602, -32002, -32003, -32000, -32001]);

/** Checks one JSON-RPC response object: version, id, exactly one of result/error, an allowed code. */
export function rpcProblem(msg: unknown): string | undefined {
  if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) return 'a response is not an object';
  const m = msg as Record<string, unknown>;
  if (m.jsonrpc !== '2.0') return 'jsonrpc is not "2.0"';
  if (!('id' in m) || !(m.id === null || typeof m.id === 'string' || typeof m.id === 'number'))
    return 'the response has no valid id';
  if ('result' in m === 'error' in m) return 'a response must have exactly one of result and error';
  if ('error' in m) {
    const e = m.error as { code?: unknown; message?: unknown } | null;
    if (!e || typeof e !== 'object') return 'error is not an object';
    if (e.code === -32603) return 'internal error -32603';
    if (typeof e.code !== 'number' || !RPC_CODES.has(e.code))
      return `error code ${String(e.code)} is not allowed`;
    if (typeof e.message !== 'string') return 'error.message is not a string';
  }
  return undefined;
}

/** Resident memory of a process in bytes (VmRSS of /proc/<pid>/status), for a child server. */
export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]) * 1024;
}

/** A short, printable form of a value for failure messages (huge strings are elided). */
export function preview(v: unknown, max = 600): string {
  const s = JSON.stringify(v, (_k, x: unknown) =>
    typeof x === 'string' && x.length > 80 ? `${x.slice(0, 40)}…(${x.length} chars)` : x,
  );
  return s === undefined ? String(v) : s.length > max ? `${s.slice(0, max)}…` : s;
}

/** Cases sent at once in each fast-check run: the server sees concurrency, the suite stays fast. */
export const GROUP = 8;

/**
 * Runs `numRuns` cases (in fast-check runs of GROUP cases sent at once; a failure's path names the
 * group). `exchange` sends one case and answers a problem line or undefined. The first problem fails
 * the run, with fast-check's seed and path; with FUZZ_COLLECT=1 every case runs and all problems are
 * returned (for surveying a server); FUZZ_SHRINK=1 shrinks a failure (slow: each step is a request).
 */
export async function runCases<T>(
  arb: fc.Arbitrary<T>,
  exchange: (c: T) => Promise<string | undefined>,
  params: { seed: number; numRuns: number; path?: string },
): Promise<string[]> {
  const collect = process.env.FUZZ_COLLECT === '1';
  const found: string[] = [];
  const one = async (c: T) => {
    const problem = await exchange(c);
    if (problem === undefined) return;
    found.push(problem);
    if (!collect) throw new Error(problem);
  };
  // fc.check, not fc.assert: assert would print the counterexample, and a deeply nested generated body
  // overflows fast-check's stringify, hiding the problem behind "Maximum call stack size exceeded".
  const details = await fc.check(
    fc.asyncProperty(fc.array(arb, { minLength: GROUP, maxLength: GROUP }), async (group) => {
      const settled = await Promise.allSettled(group.map(one));
      for (const s of settled) if (s.status === 'rejected') throw s.reason;
    }),
    {
      ...params,
      numRuns: Math.ceil(params.numRuns / GROUP),
      endOnFailure: process.env.FUZZ_SHRINK !== '1',
    },
  );
  if (details.failed) {
    const cause = details.errorInstance;
    throw new Error(
      `Property failed after ${details.numRuns} runs: seed ${details.seed}, path "${details.counterexamplePath ?? ''}"\n` +
        (cause instanceof Error ? cause.message : String(cause)),
    );
  }
  if (collect && found.length) console.log(`found ${found.length}:\n${found.join('\n')}`);
  return found;
}
