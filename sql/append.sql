-- SPDX-License-Identifier: MIT
-- append: one call of the server-side function a2_append (schema.sql), one round trip; its typed
-- caller is src/postgres/calls/append.hpp.
-- r_wake: the wake-ups the write owes (schema.sql a2_owe_wake: 1 feeds, 2 work, '' or null none),
-- which the store's notifier sends after commit (src/postgres/wake_sender.hpp).
-- $1 session  $2 now ms  $3 origin index or null  $4 ids  $5 types  $6 payloads (jsonb array)
-- $7 cause indexes  $8 cause attempts  $9 lanes  $10 settled  $11 available_at (null: none).
-- The rows, one per result row (none: one result row with null event columns), are the
-- stored-event columns of src/postgres/rows.hpp.
select r.r_has_pending, current_setting('a2.wake', true) as r_wake,
       e.session_id, e.idx, e.event_id, e.event_type, e.payload::text as payload, e.created_at,
       e.cause::text as cause, e.lane, e.processed_at, e.processed_by_attempt,
       e.returned_event_ids::text as returned_event_ids, e.first_claimed_at, e.last_claimed_at,
       e.attempt_count, e.claim_holder, e.claim_expires_at, e.failure_count, e.last_failed_at,
       e.last_failed_attempt, e.last_error, e.failed_at, e.available_at
  from a2_append($1, $2, $3, $4::text[], $5::text[], $6::jsonb, $7::bigint[], $8::bigint[],
                 $9::text[], $10::boolean[], $11::bigint[]) r
  left join lateral unnest(r.r_events) e on true
