// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import path from 'node:path';

/**
 * The dependency rule (docs/ARCHITECTURE.md), checked on paths, not on import strings: every relative
 * import is resolved against the importing file, and the layer of each side is the folder right under
 * server/src (files directly in server/src, such as app.ts, are the composition root). So
 * `operations/bots/` and the built-in bots' `bots/` are told apart, and no spelling of a path gets
 * around it.
 */
const SRC = path.resolve(import.meta.dirname, 'server/src');
const layerOf = (file) => {
  const rel = path.relative(SRC, file);
  if (rel.startsWith('..') || path.isAbsolute(rel)) return null;
  const parts = rel.split(path.sep);
  return parts.length > 1 ? parts[0] : 'root';
};
const EVERYTHING = [
  'root',
  'config',
  'logging',
  'runtime',
  'domain',
  'outbound',
  'storage',
  'events',
  'operations',
  'delivery',
  'realtime',
  'scheduler',
  'bots',
  'transports',
  'metrics',
];
/** The services that run beside the operations and call them (a layer below must not reach up to them). */
const SERVICES = ['root', 'transports', 'delivery', 'realtime', 'scheduler', 'bots'];
/** For each layer: the layers it must not import, and why (docs/ARCHITECTURE.md, "Dependency rule"). */
const FORBIDDEN = {
  domain: [EVERYTHING, 'domain/ is the innermost layer: it imports nothing of the server'],
  config: [EVERYTHING, 'config/ depends on nothing of the server'],
  runtime: [EVERYTHING, 'runtime/ (the service lifecycle, the clock) depends on nothing of the server'],
  outbound: [
    EVERYTHING.filter((l) => l !== 'domain'),
    'outbound/ (the SSRF-guarded HTTP client, webhook signatures) depends on nothing of the server but domain/',
  ],
  logging: [
    EVERYTHING.filter((l) => l !== 'config'),
    'logging/ depends on nothing of the server but its config',
  ],
  storage: [
    [...SERVICES, 'operations', 'events'],
    'storage/ must not depend on operations, transports or the services above it',
  ],
  events: [
    [...SERVICES, 'operations'],
    'events/ (bus, outbox reader) sits beside storage: it depends on nothing above it',
  ],
  operations: [
    SERVICES,
    'operations/ must not depend on transports or on the services that call it (transports → operations → domain)',
  ],
  delivery: [
    ['root', 'transports', 'realtime', 'scheduler', 'bots'],
    'delivery/ must not depend on transports',
  ],
  realtime: [
    ['root', 'transports', 'delivery', 'scheduler', 'bots'],
    'realtime/ must not depend on transports',
  ],
  scheduler: [
    ['root', 'transports', 'delivery', 'realtime', 'bots'],
    'scheduler/ must not depend on transports',
  ],
  bots: [
    ['root', 'transports', 'storage', 'realtime'],
    'built-in bots act only through operations, like any bot: no storage/, no transports/',
  ],
  metrics: [
    [...SERVICES, 'operations'],
    'metrics/ (hooks, the registry, scrape-time reads) sits beside storage: the services call its hooks, it calls none of them',
  ],
  transports: [
    ['root', 'storage', 'delivery', 'scheduler', 'bots'],
    'transports/ reach data only through operations, never storage/ directly',
  ],
};
/**
 * Inside transports/: the HTTP routes and the MCP endpoint share only the kit (io, errors, rate limits,
 * the body budget, the request context); neither reaches into the other, and the kit into neither.
 */
const TRANSPORTS = path.join(SRC, 'transports');
const transportOf = (file) => {
  const rel = path.relative(TRANSPORTS, file);
  return rel.startsWith('..') || path.isAbsolute(rel) ? null : rel.split(path.sep)[0];
};
const TRANSPORT_FORBIDDEN = { mcp: ['http'], kit: ['http', 'mcp'] };
const layers = {
  rules: {
    dependencies: {
      meta: { type: 'problem', schema: [] },
      create(context) {
        const from = layerOf(context.filename);
        const rule = from && FORBIDDEN[from];
        if (!rule) return {};
        const check = (node) => {
          const spec = node.source?.value;
          if (typeof spec !== 'string' || !spec.startsWith('.')) return;
          const target = path.resolve(path.dirname(context.filename), spec);
          const to = layerOf(target);
          if (to && to !== from && rule[0].includes(to))
            context.report({ node, message: `${from}/ must not import ${to}/ ('${spec}'): ${rule[1]}` });
          const fromT = from === 'transports' ? transportOf(context.filename) : null;
          const toT = to === 'transports' ? transportOf(target) : null;
          if (fromT && toT && TRANSPORT_FORBIDDEN[fromT]?.includes(toT))
            context.report({
              node,
              message: `transports/${fromT}/ must not import transports/${toT}/ ('${spec}'): HTTP and MCP share only transports/kit/`,
            });
        };
        return {
          ImportDeclaration: check,
          ExportNamedDeclaration: check,
          ExportAllDeclaration: check,
          ImportExpression: check,
        };
      },
    },
  },
};

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '**/dist/**',
      'data/**',
      'bench/_*/**', // local scratch, not committed
      'coverage/**',
      'sdks/python/**',
      'server/src/web/static/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: false } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
    },
  },
  {
    files: ['server/src/**/*.ts'],
    plugins: { layers },
    rules: { 'layers/dependencies': 'error' },
  },
  {
    // Type-aware rules for the server's, the SDK's and the web app's sources: a promise nobody awaits or
    // handles can reject into nowhere (an unhandled rejection ends the process; in the page, it is lost).
    files: [
      'server/src/**/*.ts',
      'sdks/typescript/src/**/*.ts',
      'sdks/testing/src/**/*.ts',
      'web/src/**/*.ts',
      'web/src/**/*.tsx',
    ],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  {
    // "Spread first": on Node.js 20 an object literal that starts with a spread and then adds properties
    // costs microseconds (domain/objects.ts, bench/object-spread.ts), as does one with a getter. Kept out
    // of the paths every request, event and delivery takes: use withFields(base, fields), or put the
    // fields first; a class for getters.
    files: [
      'server/src/events/**/*.ts',
      'server/src/delivery/**/*.ts',
      'server/src/operations/operation.ts',
      'server/src/operations/write.ts',
      'server/src/operations/idempotency.ts',
      'server/src/operations/messages/**/*.ts',
      'server/src/transports/http/server.ts',
      'server/src/transports/http/routes/webhooks.ts',
      'server/src/transports/mcp/handler.ts',
      'server/src/transports/mcp/session.ts',
    ],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ObjectExpression > SpreadElement:first-child ~ Property',
          message:
            'A literal that starts with a spread and adds properties is slow on Node 20: use withFields(base, fields) (domain/objects.ts) or put the fields first.',
        },
        {
          selector: "ObjectExpression > Property[kind='get'], ObjectExpression > Property[kind='set']",
          message:
            'An object literal with a getter or setter is built on a slow path on Node 20 (~1.25 µs, bench/object-spread.ts): use a class.',
        },
      ],
    },
  },
  {
    // CommonJS preloads (node --require), e.g. bench/pg-count-preload.cjs.
    files: ['**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        process: 'readonly',
        console: 'readonly',
        require: 'readonly',
        module: 'writable',
        __dirname: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: {
      globals: { process: 'readonly', Buffer: 'readonly', console: 'readonly', URL: 'readonly' },
    },
  },
  {
    files: [
      'server/test/**',
      'bench/**',
      'scripts/**',
      'sdks/typescript/test/**',
      'sdks/testing/test/**',
      'examples/**',
      'web/test/**',
    ],
    rules: { '@typescript-eslint/no-explicit-any': 'off', 'no-console': 'off' },
  },
);
