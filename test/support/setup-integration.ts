/** Per test file: generous timeouts (real servers) and SDK logs at WARN so test output stays readable. */
import { DefaultLogger, Runtime } from '@temporalio/worker';

jest.setTimeout(120_000);

try {
  Runtime.install({ logger: new DefaultLogger('WARN') });
} catch {
  // Already installed for this module registry.
}
