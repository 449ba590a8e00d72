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
  'storage',
  'events',
  'operations',
  'delivery',
  'realtime',
  'scheduler',
  'bots',
  'transports',
  'web',
];
/** For each layer: the layers it must not import, and why. */
const FORBIDDEN = {
  domain: [EVERYTHING, 'domain/ is the innermost layer: it imports nothing of the server'],
  config: [EVERYTHING.filter((l) => l !== 'config'), 'config/ depends on nothing of the server'],
  runtime: [EVERYTHING, 'runtime/ (the service lifecycle) depends on nothing of the server'],
  storage: [
    ['root', 'operations', 'transports', 'delivery', 'realtime', 'scheduler', 'bots', 'web'],
    'storage/ must not depend on operations, transports or the services above it',
  ],
  events: [
    ['root', 'operations', 'transports', 'delivery', 'realtime', 'scheduler', 'bots', 'web'],
    'events/ (bus, outbox reader) sits beside storage: it depends on nothing above it',
  ],
  operations: [
    ['root', 'transports', 'realtime', 'scheduler', 'bots', 'web'],
    'operations/ must not depend on transports or on the services that call it (transports → operations → domain)',
  ],
  delivery: [['root', 'transports', 'realtime', 'bots', 'web'], 'delivery/ must not depend on transports'],
  realtime: [['root', 'transports', 'delivery', 'bots', 'web'], 'realtime/ must not depend on transports'],
  scheduler: [['root', 'transports', 'realtime', 'bots', 'web'], 'scheduler/ must not depend on transports'],
  bots: [
    ['root', 'transports', 'storage', 'realtime', 'web'],
    'built-in bots act only through operations, like any bot: no storage/, no transports/',
  ],
  transports: [
    ['root', 'storage'],
    'transports/ reach data only through operations, never storage/ directly',
  ],
};
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
          const to = layerOf(path.resolve(path.dirname(context.filename), spec));
          if (to && to !== from && rule[0].includes(to))
            context.report({ node, message: `${from}/ must not import ${to}/ ('${spec}'): ${rule[1]}` });
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
    // Type-aware rules for the server's and the SDK's sources: a promise nobody awaits or handles can
    // reject into nowhere (an unhandled rejection ends the process).
    files: ['server/src/**/*.ts', 'sdks/typescript/src/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
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
      'examples/**',
      'web/test/**',
    ],
    rules: { '@typescript-eslint/no-explicit-any': 'off', 'no-console': 'off' },
  },
);
