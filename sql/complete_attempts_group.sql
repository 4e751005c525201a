-- SPDX-License-Identifier: MIT
-- complete_attempts_group: one call of the server-side function a2_complete_attempts_group
-- (schema.sql), one round trip for the complete_attempts calls (and completions with
-- claim_next) of several callers (src/postgres/write_groups.hpp); its typed caller is
-- src/postgres/calls/complete_attempts_group.hpp.
-- $1 sessions (each at most once)  $2 times (now ms of each)  $3 completion counts  $4 completion
-- indexes  $5 attempts  $6 child counts  $7 child ids  $8 types  $9 payloads (a jsonb array of
-- one element per request: an array of one array per completion)  $10 lanes  $11 settled
-- $12 available_at (null: none)  $13 claim_next holders (null: none)  $14 their lease expiries
-- ms  $15 their max events: the requests parallel, in request order; their completions, and
-- those completions' children, flattened in request order.
-- Per request k (1-based), its rows together, in part order, as complete_attempts.sql returns
-- them after k: r_wake, r_part, r_verdict, r_retry_at, r_clear_index, then the stored-event
-- columns.
select g.k, g.r_wake, o.part as r_part, o.verdict as r_verdict, g.r_retry_at, g.r_clear_index,
       o.session_id, o.idx, o.event_id, o.event_type, o.payload::text as payload, o.created_at,
       o.cause::text as cause, o.lane, o.processed_at, o.processed_by_attempt,
       o.returned_event_ids::text as returned_event_ids, o.first_claimed_at, o.last_claimed_at,
       o.attempt_count, o.claim_holder, o.claim_expires_at, o.failure_count, o.last_failed_at,
       o.last_failed_attempt, o.last_error, o.failed_at, o.available_at
  from a2_complete_attempts_group($1::text[], $2::bigint[], $3::bigint[], $4::bigint[],
                                  $5::bigint[], $6::bigint[], $7::text[], $8::text[], $9::jsonb,
                                  $10::text[], $11::boolean[], $12::bigint[], $13::text[],
                                  $14::bigint[], $15::bigint[]) g
  -- As complete_attempts.sql: unnest of several arrays expands the a2_events elements into their
  -- columns; the alias names the first two.
  cross join lateral unnest(g.r_parts, g.r_verdicts, g.r_events) with ordinality o(part, verdict)
 order by g.k, o.ordinality
