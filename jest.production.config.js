/**
 * `npm run test:production`: the production profile's own checks (TLS, SASL, mTLS, ACLs, refusals),
 * each file starting the services it needs with `production` settings. Kept out of `npm test`, so a
 * newcomer's first run stays on the fast dev stack.
 */
const base = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': 'ts-jest' },
  moduleFileExtensions: ['ts', 'js', 'json'],
};

/** @type {import('jest').Config} */
module.exports = {
  projects: [{ ...base, displayName: 'production', testMatch: ['<rootDir>/test/production/**/*.test.ts'] }],
};
