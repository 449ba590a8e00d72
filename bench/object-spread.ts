/**
 * V8 slow paths on the request path. Why domain/objects.ts `withFields` exists (and the "spread first"
 * lint rule): on Node.js 20 (V8 11.3)
 * an object literal that starts with a spread and then adds properties the spread object lacks takes a
 * slow path (a hidden class of its own for every copy). Each row: ns per copy of a fresh 4-field
 * object (as a row or a context is) with 3 fields added, and its ratio to `withFields`.
 *
 *   npx tsx bench/object-spread.ts
 */
import { withFields } from '../server/src/domain/objects.js';

const N = 200_000;
const ROUNDS = 3;

const make = (i: number) => ({ type: 'message.created', id: `e${i}`, org_id: 'o', data: { n: i } });
type Source = ReturnType<typeof make>;

const ways: [string, (e: Source, i: number) => object][] = [
  [
    'withFields(e, { position, seq, dataJson })',
    (e, i) => withFields(e, { position: i, seq: i, dataJson: '{}' }),
  ],
  [
    '{ ...e, position, seq, dataJson } (spread first)',
    (e, i) => ({ ...e, position: i, seq: i, dataJson: '{}' }),
  ],
  [
    '{ position, seq, dataJson, ...e } (fields first)',
    (e, i) => ({ position: i, seq: i, dataJson: '{}', ...e }),
  ],
  ['{ ...e, id } (overrides a field it has)', (e, i) => ({ ...e, id: `x${i}` })],
  [
    'explicit literal of every field',
    (e, i) => ({
      type: e.type,
      id: e.id,
      org_id: e.org_id,
      data: e.data,
      position: i,
      seq: i,
      dataJson: '{}',
    }),
  ],
];

function nsPerCopy(f: (e: Source, i: number) => object): number {
  let keep: object | undefined;
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) keep = f(make(i), i);
  const ns = Number(process.hrtime.bigint() - start) / N;
  if (keep === undefined) throw new Error('unreachable');
  return ns;
}

/** The best of ROUNDS timings of N calls of `f`, in ns a call. */
function bestNsPerCall(f: (i: number) => unknown): number {
  let bestNs = Infinity;
  let keep: unknown;
  for (let r = 0; r < ROUNDS; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < N; i++) keep = f(i);
    bestNs = Math.min(bestNs, Number(process.hrtime.bigint() - start) / N);
  }
  if (keep === undefined) throw new Error('unreachable');
  return bestNs;
}
const line = (name: string, ns: number) =>
  console.log(`  ${name.padEnd(52)} ${ns.toFixed(0).padStart(6)} ns`);

const best = new Map<string, number>();
for (let r = 0; r < ROUNDS; r++)
  for (const [name, f] of ways) best.set(name, Math.min(best.get(name) ?? Infinity, nsPerCopy(f)));
const base = best.get(ways[0]![0])!;
console.log(`Object copies with added fields, Node ${process.version} (best of ${ROUNDS} × ${N})`);
for (const [name] of ways)
  console.log(
    `  ${name.padEnd(52)} ${best.get(name)!.toFixed(0).padStart(6)} ns   ${(best.get(name)! / base).toFixed(1)}× withFields`,
  );

// The committed-read cache (storage/sqlite-engine.ts) hands each caller a copy of a cached result's
// array of frozen rows. Copying a frozen array takes V8's slow path.
const rowsOf = () => [Object.freeze({ key_id: 'k', bot_id: 'b', scopes: '[]', is_member: 1 })];
const arrays: [string, unknown[]][] = [
  ['array frozen too', Object.freeze(rowsOf()) as unknown[]],
  ['array not frozen (what the cache keeps)', rowsOf()],
];
console.log(`\nCopying a cached result's array of one frozen row (.slice(), best of ${ROUNDS} × ${N})`);
for (const [name, arr] of arrays)
  line(
    name,
    bestNsPerCall(() => arr.slice()),
  );

// domain/ids.ts: a UUIDv7's timestamp as hex. `toString(16)` of a number past 2^31 (not a small
// integer) takes V8's slow path; two 24-bit halves do not.
const stamp = Date.now();
const hexWays: [string, (ms: number) => string][] = [
  ['ms.toString(16).padStart(12, "0")', (ms) => ms.toString(16).padStart(12, '0')],
  [
    'two 24-bit halves (what newId does, once a ms)',
    (ms) =>
      Math.floor(ms / 0x1000000)
        .toString(16)
        .padStart(6, '0') + (ms % 0x1000000).toString(16).padStart(6, '0'),
  ],
];
console.log(`\nA millisecond timestamp as 12 hex digits (best of ${ROUNDS} × ${N})`);
for (const [name, f] of hexWays)
  line(
    name,
    bestNsPerCall((i) => f(stamp + i)),
  );

// transports/kit/request-context.ts: every HTTP request's context has two lazy getters (URL, logger).
class LazyContext {
  #url: string | undefined;
  constructor(
    readonly req: number,
    readonly requestId: string,
  ) {}
  get url(): string {
    return (this.#url ??= 'u');
  }
}
const contextWays: [string, (i: number) => { url: string }][] = [
  [
    'object literal with a getter',
    (i) => {
      let url: string | undefined;
      return {
        req: i,
        requestId: 'r',
        get url() {
          return (url ??= 'u');
        },
      };
    },
  ],
  ['class instance, getter on the prototype', (i) => new LazyContext(i, 'r')],
];
console.log(`\nA request context with a lazy getter (best of ${ROUNDS} × ${N})`);
for (const [name, f] of contextWays)
  line(
    name,
    bestNsPerCall((i) => f(i).url),
  );

// storage/stores/containers.ts `channelRowOf`: a frozen row (the SQLite committed-read cache shares
// frozen rows) copied by spread, against an explicit literal that reads its fields.
const channel = () => ({
  id: 'c',
  org_id: 'o',
  name: 'general',
  description: '',
  is_private: 0,
  created_by: null,
  created_at: 't',
  updated_at: 't',
  archived_at: null,
  is_member: 1,
});
type Channel = ReturnType<typeof channel>;
const frozenRow: Channel = Object.freeze(channel());
const plainRow: Channel = channel();
const rowCopies: [string, () => object][] = [
  ['{ ...frozenRow, is_member } (spread of a frozen row)', () => ({ ...frozenRow, is_member: true })],
  ['{ ...plainRow, is_member } (the same row not frozen)', () => ({ ...plainRow, is_member: true })],
  [
    'explicit literal reading the frozen row',
    () => ({
      id: frozenRow.id,
      org_id: frozenRow.org_id,
      name: frozenRow.name,
      description: frozenRow.description,
      is_private: frozenRow.is_private,
      created_by: frozenRow.created_by,
      created_at: frozenRow.created_at,
      updated_at: frozenRow.updated_at,
      archived_at: frozenRow.archived_at,
      is_member: true,
    }),
  ],
];
console.log(`\nCopying a 10-column row (best of ${ROUNDS} × ${N})`);
for (const [name, f] of rowCopies) line(name, bestNsPerCall(f));
