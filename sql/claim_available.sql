-- SPDX-License-Identifier: MIT
-- claim_available: one call of the server-side function a2_claim_available (schema.sql), one round trip; its typed
-- caller is src/postgres/calls/claim_available.hpp.
-- $1 session  $2 holder  $3 now ms  $4 lease expiry ms  $5 excluded indexes
-- $6 max events or null (all).
-- The rows, one per result row (none: one result row with null event columns), are the
-- stored-event columns of src/postgres/rows.hpp.
select r.r_verdict, r.r_retry_at, r.r_clear_index,
       e.session_id, e.idx, e.event_id, e.event_type, e.payload::text as payload, e.created_at,
       e.cause::text as cause, e.lane, e.processed_at, e.processed_by_attempt,
       e.returned_event_ids::text as returned_event_ids, e.first_claimed_at, e.last_claimed_at,
       e.attempt_count, e.claim_holder, e.claim_expires_at, e.failure_count, e.last_failed_at,
       e.last_failed_attempt, e.last_error, e.failed_at, e.available_at
  from a2_claim_available($1, $2, $3, $4, $5::bigint[], $6) r
  left join lateral unnest(r.r_events) e on true
