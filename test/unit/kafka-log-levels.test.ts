/** kafkajs's lines at the level they deserve: error only for what needs someone to act. */
import { logLevel } from 'kafkajs';
import { kafkaLineLevel } from '../../src/relay/kafkajs-workarounds';
import { ProducerAbandonedError } from '../../src/relay/producer';

describe('kafkaLineLevel', () => {
  it('a producer the relay abandoned on purpose is debug, however kafkajs reports it', () => {
    const err = new ProducerAbandonedError();
    expect(kafkaLineLevel(logLevel.ERROR, err.message, { stack: err.stack })).toBe('debug');
    expect(kafkaLineLevel(logLevel.ERROR, 'Connection error', { error: err.message })).toBe('debug');
  });

  it("a retriable Kafka error (the coordinator loading in a broker's first seconds) is info", () => {
    const loading = "The coordinator is loading and hence can't process requests for this group";
    expect(kafkaLineLevel(logLevel.ERROR, 'Response FindCoordinator(key: 10, version: 2)', { error: loading })).toBe(
      'info',
    );
    expect(kafkaLineLevel(logLevel.ERROR, 'Failed to send messages: x', { retryCount: 1, retryTime: 300 })).toBe(
      'info',
    );
  });

  it('the warning about limited idempotent retries (the relay limits them itself) is debug', () => {
    expect(
      kafkaLineLevel(logLevel.WARN, 'Limiting retries for the idempotent producer may invalidate EoS guarantees', {}),
    ).toBe('debug');
  });

  it('what needs action stays an error or a warning', () => {
    expect(kafkaLineLevel(logLevel.ERROR, 'SASL PLAIN authentication failed', { error: 'bad password' })).toBe('error');
    expect(kafkaLineLevel(logLevel.WARN, 'something odd', {})).toBe('warn');
  });
});
