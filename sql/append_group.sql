-- SPDX-License-Identifier: MIT
-- append_group: one call of the server-side function a2_append_group (schema.sql), one round
-- trip for the appends of several callers (src/postgres/write_groups.hpp); its typed caller is
-- src/postgres/calls/append_group.hpp.
-- $1 sessions  $2 times (now ms of each)  $3 event ids  $4 types  $5 payloads (a jsonb array): parallel, in
-- request order, each request one unsettled event without cause, lane or origin. $6 check_ids
-- (false: the store drew every request's id, so the function skips its guard; schema.sql).
-- One row per request k (1-based): r_index, r_has_pending, r_wake and r_rows as append_one.sql
-- returns them.
select g.k, g.r_index, g.r_has_pending, g.r_wake, a2_events_json(g.r_events) as r_rows
  from a2_append_group($1, $2, $3, $4, $5::jsonb, $6::boolean) g
