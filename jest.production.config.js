/**
 * `npm run test:production`: the production profile's own checks (TLS, SASL, mTLS, ACLs, refusals),
 * each file starting the services it needs with `production` settings, and the job's own integration
 * tests run on one production stack (`integration-on-production`). Kept out of `npm test`, so a
 * newcomer's first run stays on the fast dev stack.
 */
const base = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': 'ts-jest' },
  moduleFileExtensions: ['ts', 'js', 'json'],
};

// test/support/global-setup.ts starts `npm run stack -- --production` instead of the dev stack, and the
// files below take their connections (TLS, SCRAM, SASL_SSL, mTLS) from what it prints.
process.env.STACK_PROFILE = 'production';

/** The integration tests that run on the production profile too, unchanged. */
const ON_PRODUCTION = [
  'seed-table',
  'relay',
  'relay-poison',
  'relay-broker-outage',
  'schedule-operations',
  'temporal-cli',
  'web-ui',
  'worker-versioning',
];

/** @type {import('jest').Config} */
module.exports = {
  // Every test by name, so a test skipped on this profile shows, with the reason its name carries.
  verbose: true,
  projects: [
    {
      ...base,
      displayName: 'production',
      testMatch: ['<rootDir>/test/production/**/*.test.ts'],
      setupFiles: ['<rootDir>/test/production/support/own-services.ts'],
    },
    {
      ...base,
      displayName: 'integration-on-production',
      testMatch: ON_PRODUCTION.map((name) => `<rootDir>/test/integration/${name}.test.ts`),
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
      setupFilesAfterEnv: ['<rootDir>/test/support/setup-integration.ts'],
    },
  ],
};
