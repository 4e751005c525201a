-- SPDX-License-Identifier: MIT
-- complete_group: one call of the server-side function a2_complete_group (schema.sql), one round
-- trip for the completions of several callers (src/postgres/write_groups.hpp); its typed caller
-- is src/postgres/calls/complete_group.hpp.
-- $1 sessions (each at most once)  $2 indexes  $3 attempts  $4 times (now ms of each)
-- $5 child counts  $6 child ids  $7 types  $8 payloads (a jsonb array of one array per request)
-- $9 lanes  $10 settled  $11 available_at (null: none): the requests parallel, in request
-- order; their children flattened in request order.
-- Per request k (1-based), its rows together, as complete_attempt.sql returns them after k:
-- r_verdict, r_wake, then one row per child (none: one row with null event columns).
select g.k, g.r_verdict, g.r_wake,
       e.session_id, e.idx, e.event_id, e.event_type, e.payload::text as payload, e.created_at,
       e.cause::text as cause, e.lane, e.processed_at, e.processed_by_attempt,
       e.returned_event_ids::text as returned_event_ids, e.first_claimed_at, e.last_claimed_at,
       e.attempt_count, e.claim_holder, e.claim_expires_at, e.failure_count, e.last_failed_at,
       e.last_failed_attempt, e.last_error, e.failed_at, e.available_at
  from a2_complete_group($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[],
                         $6::text[], $7::text[], $8::jsonb, $9::text[], $10::boolean[],
                         $11::bigint[]) g
  left join lateral unnest(g.r_events) e on true
