-- SPDX-License-Identifier: MIT
-- read_history: the public events of the current lifetime in ($2, $3].
-- $1 session  $2 after_index  $3 through_index (2^53-1 for the head)
select session_id, idx, event_id, event_type, payload::text, created_at
  from a2_events
 where session_id = $1
   and idx > $2
   and idx <= $3
   and idx >= coalesce((select clear_index from a2_clears where session_id = $1), 0)
 order by idx
