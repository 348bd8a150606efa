/**
 * The insert-only outbox's lanes (migration 025): an event's lane is a hash of its key, as
 * `ix_outbox_events_lane`'s expression computes it. Every statement that names a lane writes it the same way,
 * so that the planner matches it to the index.
 */

/** How many lanes the events are split into: fixed by `ix_outbox_events_lane`'s expression (`& 7`). */
export const LANES = 8;

/** The lane of the key in column `key`, written as the index's expression is, so that the planner uses the index. */
export const laneSql = (key: string): string => `((hashtextextended(${key}, 0) & 7)::int)`;

/** An event's lane (of its `message_key`). */
export const LANE_SQL = laneSql('message_key');
