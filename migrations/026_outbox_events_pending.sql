-- Issue 48. What "an event not yet published" means, written once: the events after their lane's cursor, and
-- a held key's events from its hold up to the cursor (the cursor moved past them; the key's release publishes
-- them). `held_event` marks the event a key is held at (the one Kafka refused, or the first one waiting for
-- the key's old rows). The two parts never overlap: a hold is taken at an event the cursor reached.
--
-- The relay's gauges, the old table's claim (an owner's older events go first during the deploy), `outbox
-- retry` and the tests read it. A view over existing tables: created in milliseconds, locks nothing.
create or replace view profile.outbox_events_pending as
  select e.*, false as held_event
    from profile.outbox_lanes l
    cross join lateral (select * from profile.outbox_events e
                         where ((hashtextextended(e.message_key, 0) & 7)::int) = l.lane
                           and (e.xid, e.id) > (l.xid, l.id)) e
  union all
  select e.*, (e.xid, e.id) = (h.xid, h.id) as held_event
    from profile.outbox_held h
    join profile.outbox_lanes l on l.lane = h.lane
    cross join lateral (select * from profile.outbox_events e
                         where e.message_key = h.message_key
                           and (e.xid, e.id) >= (h.xid, h.id) and (e.xid, e.id) <= (l.xid, l.id)) e;

-- The relay reads it; support does not (its own grant on the events leaves out the trace context).
grant select on profile.outbox_events_pending to outbox_relay;
