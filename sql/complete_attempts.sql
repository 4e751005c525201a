-- SPDX-License-Identifier: MIT
-- complete_attempts, and complete_attempt with claim_next: one call of the server-side function
-- a2_complete_attempts (schema.sql), one round trip; its typed caller is
-- r_wake: the wake-ups the write owes (schema.sql a2_owe_wake: 1 feeds, 2 work, '' or null none),
-- which the store's notifier sends after commit (src/postgres/wake_sender.hpp).
-- src/postgres/calls/complete_attempts.hpp.
-- $1 session  $2 now ms  $3 completion indexes  $4 attempts  $5 child counts  $6 child ids
-- $7 types  $8 payloads (a jsonb array of one array per completion)  $9 lanes  $10 settled
-- $11 available_at (null: none)  $12 claim_next holder (null: none)  $13 its lease expiry ms
-- $14 its max events.
-- One reply row per element of the function's parallel arrays, in their order: r_part (k for
-- completion k, 0 for the claim), r_verdict, r_retry_at and r_clear_index (the claim's), then
-- the stored-event columns of src/postgres/rows.hpp (null when the part has no row).
select current_setting('a2.wake', true) as r_wake, o.part as r_part, o.verdict as r_verdict, r.r_retry_at, r.r_clear_index,
       o.session_id, o.idx, o.event_id, o.event_type, o.payload::text as payload, o.created_at,
       o.cause::text as cause, o.lane, o.processed_at, o.processed_by_attempt,
       o.returned_event_ids::text as returned_event_ids, o.first_claimed_at, o.last_claimed_at,
       o.attempt_count, o.claim_holder, o.claim_expires_at, o.failure_count, o.last_failed_at,
       o.last_failed_attempt, o.last_error, o.failed_at, o.available_at
  from a2_complete_attempts($1, $2, $3::bigint[], $4::bigint[], $5::bigint[], $6::text[],
                            $7::text[], $8::jsonb, $9::text[], $10::boolean[], $11::bigint[],
                            $12, $13, $14) r
  -- unnest of several arrays expands the a2_events elements into their columns (null ones
  -- into nulls); the alias names the first two.
  cross join lateral unnest(r.r_parts, r.r_verdicts, r.r_events) with ordinality o(part, verdict)
 order by o.ordinality
