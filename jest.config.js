/**
 * Unit tests run alone; workflow tests start a time-skipping test server per file; integration tests
 * share one local stack started by their global setup.
 */
const base = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': 'ts-jest' },
  moduleFileExtensions: ['ts', 'js', 'json'],
};

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    // The cycle workflow's own logic, with stub activities, on Temporal's time-skipping test server.
    {
      ...base,
      displayName: 'workflow',
      testMatch: ['<rootDir>/test/workflow/**/*.test.ts'],
      globalSetup: '<rootDir>/test/workflow/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/workflow/support/global-teardown.ts',
    },
    {
      ...base,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      testEnvironment: '<rootDir>/test/support/integration-environment.ts',
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
      setupFilesAfterEnv: ['<rootDir>/test/support/setup-integration.ts'],
    },
  ],
};
