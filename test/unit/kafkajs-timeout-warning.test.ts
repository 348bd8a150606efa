/**
 * kafkajs 2.2.4 arms its request queue's check with a negative delay; Node 24 prints a
 * TimeoutNegativeWarning for it where Node 20 said nothing. The relay's stderr stays clean of that one
 * warning and of nothing else. Each case runs in its own process: the filter is process-wide and Node
 * prints that warning once per process.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const repoRoot = path.resolve(__dirname, '../..');

/** The request queue of every kafkajs connection, scheduling its first check as a connection does (it then
 * re-arms the check for ever, hence the exit). */
const KAFKAJS_QUEUE_CHECK = `
  const RequestQueue = require('kafkajs/src/network/requestQueue');
  const noop = () => {};
  const logger = { debug: noop, info: noop, warn: noop, error: noop };
  new RequestQueue({ maxInFlightRequests: 1, requestTimeout: 1000, clientId: 't', broker: 'b', logger })
    .scheduleCheckPendingRequests();
`;

/** stderr of a Node process that first loads src/relay/kafka.ts (as every kafkajs client of the job does). */
function stderrOf(code: string): string {
  const script = `require('./src/relay/kafka').createKafka({ kafka: { clientId: 't', brokers: ['127.0.0.1:1'], ssl: false } });
${code}`;
  const result = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], {
    cwd: repoRoot,
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (result.status !== 0) throw new Error(`child failed: ${result.stderr || String(result.error)}`);
  return result.stderr;
}

describe('the TimeoutNegativeWarning of kafkajs on Node 24', () => {
  jest.setTimeout(40_000);

  it("kafkajs's negative first delay prints nothing; a warning raised after it still prints", () => {
    const stderr = stderrOf(`${KAFKAJS_QUEUE_CHECK}
      setTimeout(() => process.emitWarning('still heard', 'OtherWarning'), 20);
      setTimeout(() => process.exit(0), 100);`);
    expect(stderr).not.toContain('TimeoutNegativeWarning');
    expect(stderr).toContain('OtherWarning: still heard');
  });

  it('a negative delay outside kafkajs still warns', () => {
    expect(stderrOf('setTimeout(() => {}, -5);')).toContain('TimeoutNegativeWarning: -5 is a negative number');
  });
});
