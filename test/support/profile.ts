/**
 * Which profile of the stack the integration tests run on: the dev stack (`npm test`) or the production
 * profile (`npm run test:production`, which sets `STACK_PROFILE=production`). The same files run on both;
 * a test that cannot run on one says why through {@link devOnlyTest}.
 */

/** Names the variables the global setup took from a production stack, comma-separated. */
export const STACK_ENV_KEYS = 'STACK_ENV_KEYS';

/** True when the tests run on the production profile. */
export function onProductionProfile(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.STACK_PROFILE === 'production';
}

/**
 * `test` on the dev profile; on the production profile the test is skipped, and its name in the report
 * says why, so a skip is never silent.
 */
export function devOnlyTest(name: string, why: string, fn: jest.ProvidesCallback, timeout?: number): void {
  if (onProductionProfile()) test.skip(`${name} [skipped on the production profile: ${why}]`, fn, timeout);
  else test(name, fn, timeout);
}

/**
 * A test of what only the production profile has (its own servers, e.g. the UI server). Not registered on
 * the dev profile, whose run stays as it was.
 */
export function productionOnlyTest(name: string, fn: jest.ProvidesCallback, timeout?: number): void {
  if (onProductionProfile()) test(name, fn, timeout);
}
