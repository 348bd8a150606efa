// Lint: typescript-eslint's recommended rules everywhere, and in workflow code a ban on Node APIs,
// I/O libraries and activity implementations (workflow code must stay deterministic; it may import
// activity *types* only).
import tseslint from 'typescript-eslint';

const NODE_BUILTINS = [
  'assert', 'async_hooks', 'buffer', 'child_process', 'cluster', 'crypto', 'dgram', 'dns', 'events', 'fs',
  'fs/promises', 'http', 'http2', 'https', 'net', 'os', 'path', 'perf_hooks', 'process', 'readline', 'stream',
  'timers', 'tls', 'url', 'util', 'v8', 'vm', 'worker_threads', 'zlib',
];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['jest.config.js'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
    languageOptions: { globals: { module: 'writable' } },
  },
  {
    files: ['src/workflows/**/*.ts', 'src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            ...NODE_BUILTINS.flatMap((name) => [
              { name, message: 'Workflow code is deterministic: no Node APIs (use an activity).' },
              { name: `node:${name}`, message: 'Workflow code is deterministic: no Node APIs (use an activity).' },
            ]),
            { name: 'pg', message: 'No I/O in workflow code: query PostgreSQL from an activity.' },
            { name: 'kafkajs', message: 'No I/O in workflow code.' },
            { name: 'pino', message: 'Use `log` from @temporalio/workflow (replay-safe).' },
            { name: '@temporalio/activity', message: 'Activity context does not exist in workflow code.' },
            { name: '@temporalio/client', message: 'Use @temporalio/workflow APIs in workflow code.' },
            { name: '@temporalio/worker', message: 'Use @temporalio/workflow APIs in workflow code.' },
          ],
          patterns: [
            { group: ['**/db/*', '**/config', '**/logger', '**/stack/*'], message: 'No I/O modules in workflow code.' },
          ],
        },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'No process access in workflow code.' },
        { name: 'setInterval', message: 'Use sleep() or condition() from @temporalio/workflow.' },
      ],
    },
  },
  {
    // A value import of the activities module in workflow code would pull Node code into the bundle.
    files: ['src/workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            { name: '../activities', allowTypeImports: true, message: 'Import activity types only (import type).' },
          ],
          patterns: [
            { group: ['**/activities/*'], allowTypeImports: true, message: 'Import activity types only (import type).' },
          ],
        },
      ],
    },
  },
);
