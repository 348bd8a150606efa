/**
 * The relay's statements on held keys of the insert-only outbox (`profile.outbox_held`, migration 025): keys
 * whose events wait while their lane's cursor moves on. A key is held from its first event not published
 * (`xid`, `id`); its lane's relay sends the held events again when the hold is due, in its lane's transaction,
 * and releases the key once they are all published.
 */
import { EVENT_COLUMNS, type LaneEvent, type LanePosition } from './outbox-events';
import type { Queryable } from './pool';

/** A key to hold from the event at `from` on, and why. */
export interface NewHold {
  messageKey: string;
  from: LanePosition;
  reason: 'refused' | 'legacy';
  /** Kafka's refusal, for `refused`. */
  error?: string;
}

/**
 * The backoff of a refused key's next try, from its refusals so far (`r`): 250 ms doubling, at most `$max`
 * seconds, as a failed batch backs off.
 */
const RETRY_AT_SQL = (refusals: string, maxSeconds: string) =>
  `now() + make_interval(secs => least(${maxSeconds}::float8, 0.25 * 2 ^ least(${refusals} - 1, 20)))`;

/**
 * Holds keys of `lane`: the cursor may then move past their events. A key refused `maxRejections` times is
 * parked at once (RELAY_MAX_ATTEMPTS of 1). A key already held keeps its hold, from its earlier event.
 */
export async function holdKeys(
  db: Queryable,
  lane: number,
  holds: readonly NewHold[],
  limits: { maxRejections: number; maxBackoffSeconds: number },
): Promise<void> {
  if (holds.length === 0) return;
  await db.query(
    `insert into profile.outbox_held
            (message_key, lane, reason, xid, id, rejections, attempts, last_error, parked_at, retry_at)
     select h.message_key, $1, h.reason, h.xid::xid8, h.id, h.rejections, h.rejections, left(h.error, 2000),
            case when h.reason = 'refused' and h.rejections >= $3 then now() end,
            ${RETRY_AT_SQL('greatest(h.rejections, 1)', '$4')}
       from jsonb_to_recordset($2::jsonb) as h(message_key text, reason text, xid text, id uuid, rejections int, error text)
     on conflict (message_key) do nothing`,
    [
      lane,
      JSON.stringify(
        holds.map((h) => ({
          message_key: h.messageKey,
          reason: h.reason,
          xid: h.from.xid,
          id: h.from.id,
          rejections: h.reason === 'refused' ? 1 : 0,
          error: h.error ?? null,
        })),
      ),
      limits.maxRejections,
      limits.maxBackoffSeconds,
    ],
  );
}

/** A held key whose events its lane's relay sends again now. */
export interface DueHold {
  message_key: string;
  reason: 'refused' | 'legacy';
  /** Its first event not published. */
  xid: string;
  id: string;
}

/**
 * Up to `limit` held keys of `lane` to try now, oldest hold first: those not parked whose backoff (a refusal's,
 * or a `legacy` key's wait for its old rows) has passed.
 */
export async function dueHolds(db: Queryable, lane: number, limit: number): Promise<DueHold[]> {
  const { rows } = await db.query<DueHold>(
    `select message_key, reason, xid::text as xid, id from profile.outbox_held
      where lane = $1 and parked_at is null and retry_at <= now()
      order by held_at limit $2`,
    [lane, limit],
  );
  return rows;
}

/** The events of a held key from its hold on, up to the lane's cursor (what the cursor passed), in lane order. */
export async function heldEvents(db: Queryable, hold: DueHold, cursor: LanePosition): Promise<LaneEvent[]> {
  const { rows } = await db.query<LaneEvent>(
    `select ${EVENT_COLUMNS}
       from profile.outbox_events e
      where e.message_key = $1 and (e.xid, e.id) >= ($2::xid8, $3::uuid) and (e.xid, e.id) <= ($4::xid8, $5::uuid)
      order by e.xid, e.id`,
    [hold.message_key, hold.xid, hold.id, cursor.xid, cursor.id],
  );
  return rows;
}

/** Ends a key's hold: its events up to the cursor are published; the lane reads its later ones. */
export async function releaseHold(db: Queryable, messageKey: string): Promise<void> {
  await db.query('delete from profile.outbox_held where message_key = $1', [messageKey]);
}

/**
 * Records a try of a held key: its events before `from` were published (the hold moves to `from`), and the
 * event at `from` was refused (`refused`; parked at `maxRejections` refusals of that event) or got no verdict.
 */
export async function recordHeldTry(
  db: Queryable,
  messageKey: string,
  from: LanePosition,
  outcome: { refused: boolean; error: string },
  limits: { maxRejections: number; maxBackoffSeconds: number },
): Promise<{ parked: boolean }> {
  const { rows } = await db.query<{ parked: boolean }>(
    `with moved as (
       select h.message_key,
              case when (h.xid, h.id) = ($2::xid8, $3::uuid) then h.rejections else 0 end + $4::int as refusals
         from profile.outbox_held h where h.message_key = $1
     )
     update profile.outbox_held h
        set xid = $2::xid8, id = $3, reason = case when $4::int = 1 then 'refused' else h.reason end, rejections = m.refusals, attempts = h.attempts + 1,
            last_error = left($5, 2000),
            parked_at = case when $4::int = 1 and m.refusals >= $6 then now() end,
            retry_at = ${RETRY_AT_SQL('greatest(m.refusals, 1)', '$7')}
       from moved m
      where h.message_key = m.message_key
     returning h.parked_at is not null as parked`,
    [
      messageKey,
      from.xid,
      from.id,
      outcome.refused ? 1 : 0,
      outcome.error,
      limits.maxRejections,
      limits.maxBackoffSeconds,
    ],
  );
  return { parked: rows[0]?.parked ?? false };
}

/**
 * The deploy's rule, one text for both statements that apply it: the event aliased `event` has a row of its key in
 * the old outbox, not published yet, written before it (both are written under the owner's lock, so `created_at`
 * orders them).
 */
const OLDER_OLD_ROW_WAITING = (event: string) => `exists (select 1 from profile.outbox_messages m
   where m.message_key = ${event}.message_key and m.published_at is null and m.created_at < ${event}.created_at)`;

/** How long a `legacy` hold waits before its key's old rows are looked up again. */
const LEGACY_RECHECK_SECONDS = 1;

/**
 * True while the old outbox (`profile.outbox_messages`) has a row of the held key not published yet that was
 * written before the held event: a `legacy` hold lasts until the old rows before it are published. While it
 * does, the hold is not due again for {@link LEGACY_RECHECK_SECONDS}, so keys whose old rows are parked do not
 * take every slot of their lane's pass from keys that are ready.
 */
export async function waitsForLegacyRows(db: Queryable, hold: Pick<DueHold, 'message_key' | 'id'>): Promise<boolean> {
  const { rowCount } = await db.query(
    `update profile.outbox_held h
        set retry_at = now() + make_interval(secs => $3)
      where h.message_key = $1
        and exists (select 1 from profile.outbox_events e
                     where e.id = $2 and ${OLDER_OLD_ROW_WAITING('e')})`,
    [hold.message_key, hold.id, LEGACY_RECHECK_SECONDS],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * The keys among `events` that still have a row of the old outbox (`profile.outbox_messages`) not published yet,
 * written before the key's event here: during the deploy that moves the worker to the insert-only outbox, an
 * owner's old rows go first. One statement a batch; once the old outbox has nothing left to publish, a single
 * probe of its index of unpublished rows, and no key is looked up.
 */
export async function legacyKeys(db: Queryable, events: readonly Pick<LaneEvent, 'id'>[]): Promise<Set<string>> {
  if (events.length === 0) return new Set();
  const { rows } = await db.query<{ message_key: string }>(
    `select distinct e.message_key
       from unnest($1::uuid[]) as u(id)
       join profile.outbox_events e on e.id = u.id
      where exists (select 1 from profile.outbox_messages where published_at is null)
        and ${OLDER_OLD_ROW_WAITING('e')}`,
    [events.map((e) => e.id)],
  );
  return new Set(rows.map((r) => r.message_key));
}
