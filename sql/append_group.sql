-- SPDX-License-Identifier: MIT
-- append_group: one call of the server-side function a2_append_group (schema.sql), one round
-- trip for the appends of several callers (src/postgres/append_groups.hpp); its typed caller is
-- src/postgres/calls/append_group.hpp.
-- $1 sessions  $2 times (now ms of each)  $3 event ids  $4 types  $5 payloads (a jsonb array): parallel, in
-- request order, each request one unsettled event without cause, lane or origin.
-- Per request k (1-based): r_index, r_has_pending and r_wake as append_one.sql returns them,
-- then its rows (only when r_index is null: the replay), one per result row, in the
-- stored-event columns of src/postgres/rows.hpp; its rows are consecutive.
select g.k, g.r_index, g.r_has_pending, g.r_wake,
       e.session_id, e.idx, e.event_id, e.event_type, e.payload::text as payload, e.created_at,
       e.cause::text as cause, e.lane, e.processed_at, e.processed_by_attempt,
       e.returned_event_ids::text as returned_event_ids, e.first_claimed_at, e.last_claimed_at,
       e.attempt_count, e.claim_holder, e.claim_expires_at, e.failure_count, e.last_failed_at,
       e.last_failed_attempt, e.last_error, e.failed_at, e.available_at
  from a2_append_group($1, $2, $3, $4, $5::jsonb) g
  left join lateral unnest(g.r_events) e on true
