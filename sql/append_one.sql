-- SPDX-License-Identifier: MIT
-- append_one: one call of the server-side function a2_append_one (schema.sql), one round trip; its typed
-- caller is src/postgres/calls/append_one.hpp.
-- r_wake: the wake-ups the write owes (schema.sql a2_wake: 1 feeds, 2 work, '' or null none),
-- which the store's notifier sends after commit (src/postgres/wake_sender.hpp).
-- One unsettled event without cause, lane or origin (the common case).
-- $1 session  $2 now ms  $3 event id  $4 type  $5 payload (jsonb). r_index: the new index, or
-- null when a row already held the id (then the replayed rows follow, as append's).
-- The rows, one per result row (none: one result row with null event columns), are the
-- stored-event columns of src/postgres/rows.hpp.
select r.r_index, r.r_has_pending, current_setting('a2.wake', true) as r_wake,
       e.session_id, e.idx, e.event_id, e.event_type, e.payload::text as payload, e.created_at,
       e.cause::text as cause, e.lane, e.processed_at, e.processed_by_attempt,
       e.returned_event_ids::text as returned_event_ids, e.first_claimed_at, e.last_claimed_at,
       e.attempt_count, e.claim_holder, e.claim_expires_at, e.failure_count, e.last_failed_at,
       e.last_failed_attempt, e.last_error, e.failed_at, e.available_at
  from a2_append_one($1, $2, $3, $4, $5::jsonb) r
  left join lateral unnest(r.r_events) e on true
