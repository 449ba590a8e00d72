import fc from 'fast-check';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  errorShapeProblem,
  fuzzParameters,
  garbageValue,
  invalidFor,
  nastyShort,
  nastyString,
  objectFor,
  percentEncode,
  preview,
  replayHint,
  runCases,
  validFor,
  type JsonSchema,
} from './helpers/fuzz.js';
import { buildFuzzWorld, idSource, type FuzzWorld, type Principal } from './helpers/fuzz-world.js';
import type { RecordedExchange } from './helpers/client.js';
import { checkAgainstOpenApi } from './helpers/openapi.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * Fuzzes every operation of the served OpenAPI document with requests generated from its own
 * schemas (fast-check, fixed seed): valid-ish and wrong values, hostile strings, ids of another
 * organization, every kind of caller. Properties: never a 5xx; every error has the documented shape;
 * a 2xx answer matches the documented schema; another organization's ids never succeed and never
 * show up in an answer; callers without a token, with the wrong kind of token or without the scope
 * never succeed. FUZZ_SEED / FUZZ_RUNS / FUZZ_PATH replay or resize a run; FUZZ_SHRINK=1 shrinks a
 * failure (slow: each step is a request); FUZZ_COLLECT=1 runs everything and lists every failure.
 */
const FILE = 'fuzz-rest.test.ts';
const PARAMS = fuzzParameters(5000);
/** Operations whose body ids only select among the caller's own rows (another organization's match none). */
const FILTERING_BODIES = new Set(['POST /api/notifications/read']);
/** Health and the document itself declare no response schema: nothing to validate them against. */
const UNDESCRIBED = new Set(['/api/health', '/api/openapi.json']);

interface Operation {
  method: string;
  template: string;
  pathParams: { name: string; schema: JsonSchema }[];
  query: { name: string; schema: JsonSchema }[];
  body: JsonSchema | undefined;
  multipart: boolean;
  idempotent: boolean;
  secured: boolean;
  callers: string[] | undefined;
  botScope: string | undefined;
  /**
   * Errors it documents as text (a Slack-compatible incoming webhook answers Slack's `no_text`, …):
   * then an error may be text/plain with a snake_case code as its body.
   */
  textErrors: boolean;
}

interface Case {
  op: Operation;
  principal: Principal;
  path: string;
  /** The path parameters as generated (to see whether one is another organization's). */
  pathValues: string[];
  headers: Record<string, string>;
  body: string | undefined;
  /** The body as a value (undefined for raw text bodies). */
  bodyValue: unknown;
}

/** The operations of the document, except the MCP endpoint (its own fuzzer speaks JSON-RPC). */
function operationsOf(doc: any): Operation[] {
  const ops: Operation[] = [];
  for (const [template, item] of Object.entries<any>(doc.paths)) {
    if (template === '/api/mcp') continue;
    for (const [method, op] of Object.entries<any>(item)) {
      const params: any[] = op.parameters ?? [];
      const content = op.requestBody?.content ?? {};
      ops.push({
        method: method.toUpperCase(),
        template,
        pathParams: params
          .filter((p) => p.in === 'path')
          .map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        query: params.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        body: content['application/json']?.schema,
        multipart: 'multipart/form-data' in content,
        idempotent: params.some((p) => p.in === 'header' && p.name === 'Idempotency-Key'),
        secured: (op.security ?? doc.security ?? []).length > 0,
        callers: op['x-callers'],
        botScope: op['x-bot-scope'],
        textErrors: Object.entries<any>(op.responses ?? {}).some(
          ([status, r]) => status.startsWith('4') && r?.content?.['text/plain'] !== undefined,
        ),
      });
    }
  }
  return ops;
}

/** Raw bodies that are not the JSON object a route expects. */
const rawBody = fc.oneof(
  fc.constantFrom(
    '',
    '{',
    '{"a":',
    'null',
    '[]',
    '[{}]',
    '"text"',
    '42',
    'true',
    '{"a":1,"a":2}',
    '\u0000',
    '{"content":"\u0000"}',
    '\ufeff{}',
    '{"__proto__":{"admin":true}}',
    '{"constructor":{"prototype":{"x":1}}}',
    'x'.repeat(1_100_000),
    `{"content":"${'a'.repeat(1_048_000)}"}`,
  ),
  fc.nat({ max: 200_000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
  fc.nat({ max: 50_000 }).map((n) => '{"a":'.repeat(n) + '1' + '}'.repeat(n)),
  fc.string({ maxLength: 50 }),
);

const contentType = fc.oneof(
  { arbitrary: fc.constant('application/json'), weight: 12 },
  {
    arbitrary: fc.constantFrom(
      'text/plain',
      'application/json; charset=latin1',
      'application/merge-patch+json',
      'application/x-www-form-urlencoded',
      'multipart/form-data',
      'application/json\u00e9',
      '',
    ),
    weight: 2,
  },
  { arbitrary: fc.constant(undefined), weight: 1 },
);

/** Multipart bodies for the upload route: a good one, and broken ones. */
const multipartBody = fc
  .tuple(
    fc.constantFrom('b0undary', 'x'.repeat(70), '"quoted"', ''),
    fc.oneof(
      fc.constantFrom('a.txt', '../../etc/passwd', 'a\u0000.png', 'é😀.pdf', 'x'.repeat(2000)),
      nastyString,
    ),
    fc.constantFrom('file', 'other', 'file[]', ''),
    fc.constantFrom('hello', '\u0000\u0001\u0002', '%PDF-1.4', '\x89PNG\r\n\x1a\n', ''),
    fc.constantFrom('full', 'truncated', 'no-close', 'two-files'),
  )
  .map(([boundary, filename, field, data, shape]) => {
    const part = `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n${data}\r\n`;
    let body = part + (shape === 'two-files' ? part : '') + `--${boundary}--\r\n`;
    if (shape === 'truncated') body = part.slice(0, part.length / 2);
    if (shape === 'no-close') body = part;
    return { body, type: `multipart/form-data; boundary=${boundary}` };
  });

describe('fuzz: REST (driven by the OpenAPI document)', () => {
  let srv: TestServer;
  let fw: FuzzWorld;
  let doc: any;
  let pool: Pool;
  let errorCodes: string[];
  /** 2xx exchanges, validated against the document in one pass at the end (one Ajv for all). */
  const answered: { c: Case; x: RecordedExchange }[] = [];
  let completed = false;

  beforeAll(async () => {
    srv = await startTestServer();
    fw = await buildFuzzWorld(srv.url);
    doc = await (await fetch(`${srv.url}/api/openapi.json`)).json();
    errorCodes = doc.components.schemas.Error.properties.error.properties.code.enum;
    pool = new Pool(srv.url, { connections: 4, pipelining: 1, headersTimeout: 30_000, bodyTimeout: 30_000 });
  }, 60_000);
  afterAll(async () => {
    await pool?.close();
    await srv?.close();
  });

  function caseArb(ops: Operation[]): fc.Arbitrary<Case> {
    const ids = idSource(fw);
    const byName = (name: string) => fw.principals.filter((p) => p.name === name);
    const principal = fc.oneof(
      ...[
        ['org admin', 3],
        ['member', 3],
        ['system admin', 1],
        ['bot (all scopes)', 3],
        ['bot (messages:read)', 2],
        ['bot (tasks:read, channels:read)', 2],
        ['no token', 1],
        ['garbage token', 1],
      ].map(([name, weight]) => ({
        arbitrary: fc.constantFrom(...byName(name as string)),
        weight: weight as number,
      })),
    );
    // A caller the operation accepts (kind and scope), so that valid-ish input reaches the database.
    const fitting = (op: Operation) => {
      const ok = fw.principals.filter((p) =>
        p.kind === 'user'
          ? !op.callers || op.callers.includes('user')
          : p.kind === 'bot' &&
            (!op.callers || op.callers.includes('bot')) &&
            (!p.scopes || !op.botScope || op.botScope === 'any' || p.scopes.includes(op.botScope)),
      );
      return ok.length ? fc.constantFrom(...ok) : principal;
    };
    const pathValue = (name: string, schema: JsonSchema): fc.Arbitrary<string> =>
      Array.isArray(schema.enum)
        ? fc.oneof({ arbitrary: fc.constantFrom(...(schema.enum as string[])), weight: 5 }, nastyShort)
        : name === 'commandName'
          ? fc.oneof(fc.constantFrom('deploy', 'missing'), nastyShort)
          : ids.idFor(name);
    const queryValue = (name: string, schema: JsonSchema): fc.Arbitrary<string | undefined> =>
      fc
        .oneof(
          { arbitrary: fc.constant(undefined), weight: 5 },
          { arbitrary: validFor(schema, name, ids), weight: 4 },
          { arbitrary: invalidFor(schema, false), weight: 2 },
          { arbitrary: fc.constantFrom('x'.repeat(20_000)), weight: 1 },
        )
        .map((v) =>
          v === undefined ? undefined : typeof v === 'string' ? v : (JSON.stringify(v) ?? 'undefined'),
        );

    return fc.constantFrom(...ops).chain((op) =>
      fc
        .record({
          principal: fc.oneof({ arbitrary: fitting(op), weight: 3 }, { arbitrary: principal, weight: 2 }),
          path: fc.tuple(...op.pathParams.map((p) => pathValue(p.name, p.schema))),
          query: fc.tuple(...op.query.map((q) => queryValue(q.name, q.schema))),
          extraQuery: fc.option(fc.tuple(fc.oneof(fc.string({ maxLength: 10 }), nastyShort), nastyShort), {
            freq: 8,
          }),
          json: op.body
            ? fc.oneof(
                { arbitrary: objectFor(op.body, ids).map((value) => ({ value })), weight: 8 },
                { arbitrary: garbageValue.map((value) => ({ value })), weight: 1 },
                { arbitrary: rawBody.map((raw) => ({ raw })), weight: 1 },
              )
            : fc.option(
                rawBody.map((raw) => ({ raw })),
                { freq: 10 },
              ),
          multipart: op.multipart ? multipartBody : fc.constant(undefined),
          type: contentType,
          idem: op.idempotent ? fc.option(fc.oneof(fc.uuid(), nastyShort), { freq: 3 }) : fc.constant(null),
        })
        .map((g): Case => {
          let path = op.template;
          op.pathParams.forEach((p, i) => (path = path.replace(`{${p.name}}`, percentEncode(g.path[i]!))));
          const qs: string[] = [];
          op.query.forEach((q, i) => {
            const v = g.query[i];
            if (v !== undefined) qs.push(`${q.name}=${percentEncode(v)}`);
          });
          if (g.extraQuery) qs.push(`${percentEncode(g.extraQuery[0])}=${percentEncode(g.extraQuery[1])}`);
          if (qs.length) path += `?${qs.join('&')}`;
          const headers: Record<string, string> = {};
          if (g.principal.token) headers.authorization = `Bearer ${g.principal.token}`;
          let body: string | undefined;
          let bodyValue: unknown;
          if (g.multipart) {
            body = g.multipart.body;
            headers['content-type'] = g.multipart.type;
          } else if (g.json) {
            if ('value' in g.json) {
              bodyValue = g.json.value;
              body = JSON.stringify(g.json.value);
            } else body = g.json.raw;
            if (g.type !== undefined) headers['content-type'] = g.type;
          }
          if (typeof g.idem === 'string') headers['idempotency-key'] = g.idem;
          return { op, principal: g.principal, path, pathValues: g.path, headers, body, bodyValue };
        }),
    );
  }

  /** Header values a client cannot send (control characters) are sent percent-encoded instead. */
  const safeHeaders = (h: Record<string, string>) =>
    Object.fromEntries(
      Object.entries(h).map(([k, v]) => [k, /^[\x20-\x7e]*$/.test(v) ? v : percentEncode(v)]),
    );

  function containsAny(value: unknown, set: Set<string>): boolean {
    if (typeof value === 'string') return set.has(value);
    if (value === null || typeof value !== 'object') return false;
    // Deep garbage is not where ids hide; the walk stops early.
    const stack: unknown[] = [value];
    let seen = 0;
    while (stack.length && seen++ < 10_000) {
      const v = stack.pop();
      if (typeof v === 'string' && set.has(v)) return true;
      if (v !== null && typeof v === 'object') stack.push(...Object.values(v as object));
    }
    return false;
  }

  /** Every property of one exchange; returns the first violated, if any. */
  function problemOf(c: Case, status: number, type: string | null, text: string): string | undefined {
    if (status >= 500) return `HTTP ${status}`;
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    const ok = status >= 200 && status < 300;
    if (status >= 400 && c.op.textErrors && type?.includes('text/plain')) {
      if (!/^[a-z_]{1,40}$/.test(text)) return `error ${status} is not a text code: ${text.slice(0, 80)}`;
    } else if (status >= 400) {
      if (!type?.includes('application/json')) return `error ${status} is not JSON (${type})`;
      const p = errorShapeProblem(body, errorCodes);
      if (p) return `error ${status}: ${p}`;
    }
    const p = c.principal;
    // Without a valid token: 401, or a refusal that needs no identity (malformed input, body limits);
    // never an answer that depends on what exists (403, 404). An empty path parameter is another route.
    if (c.op.secured && (p.kind === 'none' || p.kind === 'garbage') && !c.pathValues.includes(''))
      if (![400, 401, 413, 415, 431].includes(status))
        return `a request with ${p.kind === 'none' ? 'no' : 'a garbage'} token answered ${status}, not 401`;
    if (!ok) return undefined;
    if (p.kind === 'user' && c.op.callers && !c.op.callers.includes('user'))
      return 'a user token succeeded on a bot-only operation';
    if (p.kind === 'bot' && c.op.callers && !c.op.callers.includes('bot'))
      return 'a bot key succeeded on a user-only operation';
    if (
      p.kind === 'bot' &&
      p.scopes &&
      c.op.botScope &&
      c.op.botScope !== 'any' &&
      !p.scopes.includes(c.op.botScope)
    )
      return `a bot key without ${c.op.botScope} succeeded`;
    if (p.org === 'A') {
      if (c.pathValues.some((v) => fw.foreignIds.has(v)))
        return "another organization's id in the path succeeded";
      if (containsAny(c.bodyValue, fw.foreignIds) && !FILTERING_BODIES.has(`${c.op.method} ${c.op.template}`))
        return "another organization's id in the body succeeded";
      const sent = `${c.path} ${c.body ?? ''}`;
      for (const id of fw.foreignIds)
        if (text.includes(id) && !sent.includes(id))
          return `the answer shows another organization's id ${id}`;
    }
    // An empty path parameter reaches another route (/api/users/ is the list): not this operation's answer.
    if (!UNDESCRIBED.has(c.op.template) && !c.pathValues.includes(''))
      answered.push({
        c,
        x: { method: c.op.method, path: c.path.split('?')[0]!, status, contentType: type, body },
      });
    return undefined;
  }

  it('at least 5,000 generated requests: no 5xx, documented errors and answers, no cross-organization success', async () => {
    const ops = operationsOf(doc);
    expect(ops.length).toBeGreaterThan(60);
    let found: string[] = [];
    const spare = [...fw.spareTokens];
    let cases = 0;
    let failures = 0;
    const statuses = new Map<number, number>();
    const heapBefore = process.memoryUsage().heapUsed;
    const started = Date.now();

    async function exchange(c: Case): Promise<string | undefined> {
      cases++;
      // A fuzzed logout must not sign out the run's member: it spends a spare token of the member.
      if (c.op.template === '/api/auth/logout' && c.principal.kind === 'user')
        c = { ...c, headers: { ...c.headers, authorization: `Bearer ${spare.pop() ?? 'wrut_spent'}` } };
      let status = 0;
      let type: string | null = null;
      let text = '';
      let problem: string | undefined;
      try {
        const res = await pool.request({
          method: c.op.method as 'GET',
          path: c.path,
          headers: safeHeaders(c.headers),
          body: c.body,
        });
        status = res.statusCode;
        type = (res.headers['content-type'] as string | undefined) ?? null;
        text = await res.body.text();
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        problem = problemOf(c, status, type, text);
      } catch (err) {
        problem = `no answer (${(err as Error).message})`;
      }
      if (!problem) return undefined;
      // The whole request goes to a file: huge and binary bodies do not fit a message.
      const file = join(tmpdir(), `fuzz-rest-failure-${process.pid}-${failures++}.json`);
      writeFileSync(
        file,
        JSON.stringify({
          method: c.op.method,
          path: c.path,
          headers: c.headers,
          body: c.body,
          status,
          answer: text,
        }),
      );
      return (
        `${c.op.method} ${c.op.template} as ${c.principal.name}: ${problem}\n` +
        `  request ${c.op.method} ${c.path.slice(0, 300)} body ${preview(c.body, 400)}\n` +
        `  answer ${status} ${text.slice(0, 300)}\n  full request: ${file}`
      );
    }

    try {
      found = await runCases(caseArb(ops), exchange, PARAMS);
      completed = true;
    } finally {
      const heapAfter = process.memoryUsage().heapUsed;
      console.log(
        `fuzz-rest: ${cases} cases on ${srv.dialect} in ${((Date.now() - started) / 1000).toFixed(1)} s; ` +
          `statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}; ` +
          `heap ${(heapBefore / 2 ** 20).toFixed(0)} → ${(heapAfter / 2 ** 20).toFixed(0)} MB; ` +
          `replay: ${replayHint(FILE, PARAMS)}`,
      );
    }
    expect(found).toEqual([]);
    expect(cases).toBeGreaterThanOrEqual(PARAMS.numRuns);
    // The server still answers, and the run did not leave the heap swollen (bodies up to 1 MB each).
    expect((await fetch(`${srv.url}/api/health`)).status).toBe(200);
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(400 * 2 ** 20);
  }, 400_000);

  it('every 2xx answer of the run matches the schema the document declares', () => {
    const t0 = Date.now();
    const { problems, validated } = checkAgainstOpenApi(
      doc,
      answered.map((a) => a.x),
    );
    console.log(`fuzz-rest: ${validated} 2xx answers validated in ${Date.now() - t0} ms`);
    // A full run always has successes to check; a run stopped by a failure may have none yet.
    if (completed) expect(answered.length).toBeGreaterThan(PARAMS.numRuns / 100);
    // Each problem names method, path template and status; the first request of that kind reproduces it.
    const lines = [...new Set(problems)].map((p) => {
      const a = answered.find((x) => p.startsWith(`${x.x.method} `) && p.includes(` ${x.x.status}:`));
      return a ? `${p}\n  e.g. ${a.c.op.method} ${a.c.path.slice(0, 200)} body ${preview(a.c.body, 300)}` : p;
    });
    expect(lines).toEqual([]);
  }, 120_000);

  // Two findings of this suite, pinned as plain cases so that they read on their own.
  it('a deeply nested body with an Idempotency-Key answers 4xx, not 500', async () => {
    const depth = 5000;
    const res = await fetch(`${srv.url}/api/topics/${fw.local.topic[0]}/messages`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${fw.orgA.admin.token}`,
        'content-type': 'application/json',
        'idempotency-key': `deep-${Date.now()}`,
      },
      body: '{"a":'.repeat(depth) + '1' + '}'.repeat(depth),
    });
    const body = await res.json();
    expect(res.status, JSON.stringify(body)).toBeGreaterThanOrEqual(400);
    expect(res.status, JSON.stringify(body)).toBeLessThan(500);
    expect(errorShapeProblem(body, errorCodes)).toBeUndefined();
  });

  it('a request refused by the HTTP parser (431) answers a documented error code', async () => {
    // 431: the request line and headers exceed Node's 16 KB.
    const res = await pool.request({ method: 'GET', path: `/api/health?q=${'x'.repeat(20_000)}` });
    const body = (await res.body.json()) as unknown;
    expect(res.statusCode).toBe(431);
    expect(errorShapeProblem(body, errorCodes), JSON.stringify(body)).toBeUndefined();
  });
});
