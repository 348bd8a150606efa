/**
 * Once per test run, before the workflow test files start: fetches Temporal's time-skipping test
 * server on first use (progress on stderr) and bundles the workflow code, so each file starts only its
 * own server and each test's worker starts in milliseconds.
 */
import { ensureTemporalTestServer } from '../../../scripts/stack/temporal-test-server';
import { writeTestBundle } from '../../support/bundle';

export default async function globalSetup(): Promise<void> {
  process.env.TEMPORAL_TEST_SERVER_PATH = await ensureTemporalTestServer((line) =>
    process.stderr.write(`[workflow tests] ${line}\n`),
  );
  process.env.WORKFLOW_TEST_BUNDLE_PATH = await writeTestBundle();
}
