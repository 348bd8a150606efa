/**
 * The integration tests' Jest environment: Node's, plus the relay's filter of kafkajs's TimeoutNegativeWarning
 * (src/relay/kafkajs-workarounds.ts) installed on the worker process itself. A test file's `process` is
 * Jest's copy, so the relay's own call to it (test/support/relay.ts) filters nothing there, and Node's timers
 * warn through the real one: a passing `npm test` printed kafkajs's warning once per Jest worker.
 */
import { TestEnvironment } from 'jest-environment-node';
import { dropKafkajsNegativeTimeoutWarning } from '../../src/relay/kafkajs-workarounds';

dropKafkajsNegativeTimeoutWarning();

export default TestEnvironment;
