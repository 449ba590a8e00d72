// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The dependency rule (docs/ARCHITECTURE.md): transports → operations → domain, with storage and
 * events beside operations. Each layer may not import the layers above it.
 */
const layer = (files, forbidden, message) => ({
  files,
  rules: {
    'no-restricted-imports': [
      'error',
      { patterns: forbidden.map((f) => ({ group: [`**/${f}/**`, `**/${f}.js`], message })) },
    ],
  },
});

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
  layer(
    ['server/src/domain/**'],
    ['operations', 'storage', 'transports', 'events', 'delivery', 'web', 'app', 'config'],
    'domain/ is the innermost layer: it imports nothing of the server',
  ),
  layer(
    ['server/src/storage/**'],
    ['operations', 'transports', 'delivery', 'web'],
    'storage/ must not depend on operations or transports',
  ),
  layer(
    ['server/src/operations/**'],
    ['transports', 'web'],
    'operations/ must not depend on transports (transports → operations → domain)',
  ),
  layer(
    ['server/src/events/**', 'server/src/delivery/**'],
    ['transports', 'web'],
    'events/ and delivery/ must not depend on transports',
  ),
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: {
      globals: { process: 'readonly', Buffer: 'readonly', console: 'readonly', URL: 'readonly' },
    },
  },
  {
    files: ['server/test/**', 'bench/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', 'no-console': 'off' },
  },
);
