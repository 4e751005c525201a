-- SPDX-License-Identifier: MIT
-- claim_group: one call of the server-side function a2_claim_group (schema.sql), one round trip
-- for the claims of several callers (src/postgres/write_groups.hpp); its typed caller is
-- src/postgres/calls/claim_group.hpp.
-- $1 sessions (each at most once)  $2 holders  $3 times (now ms of each)  $4 lease expiries ms
-- $5 max events (null: all): parallel, in request order, each request a claim without
-- exclusions.
-- Per request k (1-based), its rows as claim_available.sql returns them, together.
select c.k, c.r_verdict, c.r_retry_at, c.r_clear_index,
       c.session_id, c.idx, c.event_id, c.event_type, c.payload::text as payload, c.created_at,
       c.cause::text as cause, c.lane, c.processed_at, c.processed_by_attempt,
       c.returned_event_ids::text as returned_event_ids, c.first_claimed_at, c.last_claimed_at,
       c.attempt_count, c.claim_holder, c.claim_expires_at, c.failure_count, c.last_failed_at,
       c.last_failed_attempt, c.last_error, c.failed_at, c.available_at
  from a2_claim_group($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[]) c
