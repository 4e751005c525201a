-- SPDX-License-Identifier: MIT
-- dead_letters: full rows of the dead letters of the current lifetime, ascending (the pending
-- index bounds the scan to unfinished work).
-- $1 session
select to_jsonb(e)::text
  from a2_events e
 where e.session_id = $1
   and e.processed_at is null
   and e.failed_at is not null
   and e.idx > coalesce((select clear_index from a2_clears where session_id = $1), 0)
 order by e.idx
