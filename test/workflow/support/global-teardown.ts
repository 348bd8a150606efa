/** Deletes the workflow bundle the global setup wrote. */
import { removeTestBundle } from '../../support/bundle';

export default async function globalTeardown(): Promise<void> {
  removeTestBundle(process.env.WORKFLOW_TEST_BUNDLE_PATH);
}
