-- SPDX-License-Identifier: MIT
-- held_claims: the live leases of a holder in the current lifetime, ascending. The scan is of
-- the partial index a2_events_pending (session_id, idx) where processed_at is null, so its cost
-- follows the session's unfinished events, never its history.
-- $1 session  $2 holder  $3 now ms
select e.idx, e.attempt_count, e.claim_expires_at
  from a2_events e
 where e.session_id = $1
   and e.processed_at is null
   and e.failed_at is null
   and e.claim_holder = $2
   and e.claim_expires_at > $3
   and e.idx > coalesce((select clear_index from a2_clears where session_id = $1), 0)
 order by e.idx
