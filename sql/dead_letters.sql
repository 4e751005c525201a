-- SPDX-License-Identifier: MIT
-- dead_letters: full rows of the dead letters of the current lifetime, ascending (the pending
-- index bounds the scan to unfinished work); the stored-event columns of src/postgres/rows.hpp.
-- $1 session
select e.session_id, e.idx, e.event_id, e.event_type, e.payload::text as payload, e.created_at,
       e.cause::text as cause, e.lane, e.processed_at, e.processed_by_attempt,
       e.returned_event_ids::text as returned_event_ids, e.first_claimed_at, e.last_claimed_at,
       e.attempt_count, e.claim_holder, e.claim_expires_at, e.failure_count, e.last_failed_at,
       e.last_failed_attempt, e.last_error, e.failed_at, e.available_at
  from a2_events e
 where e.session_id = $1
   and e.processed_at is null
   and e.failed_at is not null
   and e.idx > coalesce((select clear_index from a2_clears where session_id = $1), 0)
 order by e.idx
