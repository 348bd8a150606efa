/** The relay's spans: one "outbox publish" per row and batch, a child of the owner span that wrote the row. */
import * as otel from '@opentelemetry/api';
import type { OutboxMessage } from '../db/outbox';
import { contextFromTraceparent } from '../observability/tracing';
import type { Delivery } from './deliver';

/**
 * Starts the rows' spans; the returned function ends them with what became of each row (attribute `outcome`:
 * published, rejected, failed; none for a row that waited behind a rejected row of its key).
 */
export function startPublishSpans(tracer: otel.Tracer, rows: readonly OutboxMessage[]): (delivery: Delivery) => void {
  const spans = new Map(
    rows.map((row) => [
      row.id,
      tracer.startSpan(
        'outbox publish',
        {
          kind: otel.SpanKind.PRODUCER,
          attributes: {
            correlationId: row.correlation_id,
            messageId: row.id,
            ownerUserId: row.aggregate_id,
            'messaging.destination.name': row.topic,
            attempt: row.attempts + 1,
          },
        },
        contextFromTraceparent(row.trace_context),
      ),
    ]),
  );
  return (delivery) => {
    for (const row of delivery.published) spans.get(row.id)?.setAttribute('outcome', 'published');
    for (const { row, error } of delivery.rejected) {
      spans
        .get(row.id)
        ?.setAttribute('outcome', 'rejected')
        .setStatus({ code: otel.SpanStatusCode.ERROR, message: error });
    }
    for (const row of delivery.failed) {
      spans
        .get(row.id)
        ?.setAttribute('outcome', 'failed')
        .setStatus({ code: otel.SpanStatusCode.ERROR, message: delivery.error?.message });
    }
    for (const span of spans.values()) span.end();
  };
}
