// Lint: typescript-eslint's recommended rules everywhere, promises that are neither awaited nor handled
// are errors (type-aware), and workflow-safe code may import values from a short allowlist only:
// workflow code must stay deterministic, and it may import activity *types* only.
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

const WORKFLOW_SAFE =
  'Workflow-safe code imports values only from @temporalio/workflow, @temporalio/common, @opentelemetry/api and src/domain (types from anywhere: `import type`).';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'test-artifacts/', '.record-histories-*/'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // No module imports, even for types only, a module that leads back to it: a circle is two rooms
    // that cannot be read, moved or tested one without the other.
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js', '.json'] })],
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
    },
    rules: { 'import-x/no-cycle': ['error', { ignoreExternal: true }] },
  },
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // The workflow holds un-awaited promises on purpose (the read-ahead page, owner groups in flight):
      // each must be awaited, handled, or marked `void` where dropping it is the point.
      '@typescript-eslint/no-floating-promises': 'error',
    },
  },
  {
    files: ['jest.config.js', 'jest.production.config.js'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
    languageOptions: { globals: { module: 'writable' } },
  },
  {
    // The allowlist: anything else (Node APIs, pg, kafkajs, pino, config, db, activities' values) is refused.
    files: ['src/workflows/**/*.ts', 'src/domain/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!(@temporalio/(workflow|common)|@opentelemetry/api|\\./[\\w.-]+|\\.\\./domain/[\\w.-]+)$)',
              allowTypeImports: true,
              message: WORKFLOW_SAFE,
            },
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
);
