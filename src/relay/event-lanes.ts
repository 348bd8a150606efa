/**
 * A relay loop's turn over the insert-only outbox (migration 025): a pass over each lane another loop does not
 * hold, from the loop's next lane on, with what each pass did logged and counted. A lane's batch that is not
 * full says nothing of the others, so the loop waits for rows only when no lane filled one.
 */
import type { OutboxMessage } from '../db/outbox';
import { LANES } from '../db/lane-sql';
import type { Logger } from '../observability/logger';
import type { RelayMetrics } from '../observability/metrics';
import { publishLane, type LanePassDeps } from './lane-pass';

/** What a turn did: the most events a lane's batch held, the events published and refused; or its failure. */
export type EventsOutcome = { claimed: number; published: number; rejected: number } | { failed: Error; rows: number };

/** What a turn needs from its relay loop. */
export interface EventLanesDeps {
  pass: LanePassDeps;
  log: Logger;
  metrics?: RelayMetrics;
  /** Counts and logs events whose publication committed. */
  reportPublished(events: readonly OutboxMessage[], fields: Record<string, number>): void;
  /** True once the relay stops: the turn ends after the lane in hand. */
  stopping(): boolean;
}

/** Rows per topic: a counter's labels are looked up once a batch, not once a row. */
export function countByTopic(rows: readonly OutboxMessage[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const row of rows) counts.set(row.topic, (counts.get(row.topic) ?? 0) + 1);
  return counts;
}

/** One turn from lane `first` on; a failed pass ends it. */
export async function publishEventLanes(deps: EventLanesDeps, first: number): Promise<EventsOutcome> {
  const total = { claimed: 0, published: 0, rejected: 0 };
  for (let k = 0; k < LANES && !deps.stopping(); k++) {
    const lane = (first + k) % LANES;
    const t0 = performance.now();
    const pass = await publishLane(deps.pass, lane);
    if (!pass) continue;
    deps.reportPublished(pass.published, { lane, ms: Math.round(performance.now() - t0), ...pass.timings });
    for (const { row, error } of pass.delivery?.rejected ?? []) {
      deps.log.warn(
        { id: row.id, correlationId: row.correlation_id, err: error, lane },
        'event refused by Kafka; its key is held',
      );
    }
    for (const { event, error, parked } of pass.heldRefused) {
      deps.log.warn(
        { id: event.id, correlationId: event.correlation_id, err: error, lane, parked },
        parked ? 'held event refused by Kafka again and parked' : 'held event refused by Kafka again',
      );
    }
    const rejected = (pass.delivery?.rejected ?? []).map(({ row }) => row).concat(pass.heldRefused.map((r) => r.event));
    for (const [topic, n] of countByTopic(rejected)) deps.metrics?.rejected.inc({ topic }, n);
    if (pass.failed) {
      for (const topic of new Set(pass.failed.events.map((r) => r.topic))) deps.metrics?.failures.inc({ topic });
      return { failed: pass.failed.error, rows: pass.failed.events.length };
    }
    total.claimed = Math.max(total.claimed, pass.claimed);
    total.published += pass.published.length;
    total.rejected += rejected.length;
  }
  return total;
}
