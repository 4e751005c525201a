-- SPDX-License-Identifier: MIT
-- claim_available: one call of the server-side function a2_claim (schema.sql), one round trip;
-- its typed caller is src/postgres/calls/claim_available.hpp.
-- $1 session  $2 holder  $3 now ms  $4 lease expiry ms  $5 excluded indexes
-- $6 max events or null (all).
-- One row per claimed event, in no particular order (the caller sorts them by index), or one
-- row with null event columns (busy, settled); the event columns are the stored-event columns
-- of src/postgres/rows.hpp.
select c.r_verdict, c.r_retry_at, c.r_clear_index,
       c.session_id, c.idx, c.event_id, c.event_type, c.payload::text as payload, c.created_at,
       c.cause::text as cause, c.lane, c.processed_at, c.processed_by_attempt,
       c.returned_event_ids::text as returned_event_ids, c.first_claimed_at, c.last_claimed_at,
       c.attempt_count, c.claim_holder, c.claim_expires_at, c.failure_count, c.last_failed_at,
       c.last_failed_attempt, c.last_error, c.failed_at, c.available_at
  from a2_claim($1, $2, $3, $4, $5::bigint[], $6) c
