/** Whether spans go anywhere: the relay makes a span per row only when they do. */
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createTracing } from '../../src/observability/tracing';

describe('createTracing', () => {
  test('exports nothing without an OTLP endpoint or a processor', async () => {
    const tracing = createTracing({ serviceName: 'test' });
    expect(tracing.exporting).toBe(false);
    await tracing.shutdown();
  });

  test('exports with an OTLP endpoint', async () => {
    const tracing = createTracing({ serviceName: 'test', otlpEndpoint: 'http://127.0.0.1:1' });
    expect(tracing.exporting).toBe(true);
    await tracing.shutdown().catch(() => {});
  });

  test('exports to a given processor, and its spans arrive there', async () => {
    const exporter = new InMemorySpanExporter();
    const tracing = createTracing({ serviceName: 'test', spanProcessor: new SimpleSpanProcessor(exporter) });
    expect(tracing.exporting).toBe(true);
    tracing.tracer.startSpan('outbox publish').end();
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['outbox publish']);
    await tracing.shutdown();
  });
});
