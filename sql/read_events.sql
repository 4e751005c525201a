-- SPDX-License-Identifier: MIT
-- read_events: one page (256) of public events after the cursor; a cursor below the boundary
-- resumes at the marker.
-- $1 session  $2 after_index
select session_id, idx, event_id, event_type, payload::text, created_at
  from a2_events
 where session_id = $1
   and idx > $2
   and idx >= coalesce((select clear_index from a2_clears where session_id = $1), 0)
 order by idx
 limit 256
