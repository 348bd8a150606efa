/**
 * Per test file: generous timeouts (real servers) and the SDK's log at ERROR, so a green run is quiet: its
 * WARN lines are the failed activities and workflows the tests cause on purpose, each with a stack trace.
 * `TEST_SDK_LOG=WARN npx jest <file>` shows them when a test needs explaining.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';

jest.setTimeout(120_000);

try {
  Runtime.install({ logger: new DefaultLogger(process.env.TEST_SDK_LOG === 'WARN' ? 'WARN' : 'ERROR') });
} catch {
  // Already installed for this module registry.
}
