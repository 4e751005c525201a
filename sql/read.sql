-- SPDX-License-Identifier: MIT
-- read / read_range: the stored rows of the current lifetime (marker included) in
-- ($2, $3], one statement, so the bounds are one snapshot; the stored-event columns of
-- src/postgres/rows.hpp.
-- $1 session  $2 after_index  $3 through_index (2^53-1 for the head)
select e.session_id, e.idx, e.event_id, e.event_type, e.payload::text as payload, e.created_at,
       e.cause::text as cause, e.lane, e.processed_at, e.processed_by_attempt,
       e.returned_event_ids::text as returned_event_ids, e.first_claimed_at, e.last_claimed_at,
       e.attempt_count, e.claim_holder, e.claim_expires_at, e.failure_count, e.last_failed_at,
       e.last_failed_attempt, e.last_error, e.failed_at, e.available_at
  from a2_events e
 where e.session_id = $1
   and e.idx > $2
   and e.idx <= $3
   and e.idx >= coalesce((select clear_index from a2_clears where session_id = $1), 0)
 order by e.idx
