-- SPDX-License-Identifier: MIT
-- complete_attempt: one call of the server-side function a2_complete_attempt (schema.sql), one round trip; its typed
-- caller is src/postgres/calls/complete_attempt.hpp.
-- r_wake: the wake-ups the write owes (schema.sql a2_owe_wake: 1 feeds, 2 work, '' or null none),
-- which the store's notifier sends after commit (src/postgres/wake_sender.hpp).
-- $1 session  $2 index  $3 attempt  $4 now ms  $5 child ids  $6 types  $7 payloads (jsonb array)
-- $8 lanes  $9 settled  $10 available_at (null: none).
-- The rows, one per result row (none: one result row with null event columns), are the
-- stored-event columns of src/postgres/rows.hpp.
select r.r_verdict, current_setting('a2.wake', true) as r_wake,
       e.session_id, e.idx, e.event_id, e.event_type, e.payload::text as payload, e.created_at,
       e.cause::text as cause, e.lane, e.processed_at, e.processed_by_attempt,
       e.returned_event_ids::text as returned_event_ids, e.first_claimed_at, e.last_claimed_at,
       e.attempt_count, e.claim_holder, e.claim_expires_at, e.failure_count, e.last_failed_at,
       e.last_failed_attempt, e.last_error, e.failed_at, e.available_at
  from a2_complete_attempt($1, $2, $3, $4, $5::text[], $6::text[], $7::jsonb, $8::text[],
                           $9::boolean[], $10::bigint[]) r
  left join lateral unnest(r.r_events) e on true
