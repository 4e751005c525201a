-- SPDX-License-Identifier: MIT
-- read_tail: the events max($2, clearIndex)..$3, at most @A2_READ_TAIL_ROWS@ (one more than a page, so the caller
-- can tell that the range does not fit), with the boundary on every row.
-- $1 session  $2 from_index  $3 through_index (2^53-1 for the head)
select session_id, idx, event_id, event_type, payload::text, created_at,
       coalesce((select clear_index from a2_clears where session_id = $1), 0) as clear_index
  from a2_events
 where session_id = $1
   and idx >= greatest($2, coalesce((select clear_index from a2_clears where session_id = $1), 0))
   and idx <= $3
 order by idx
 limit @A2_READ_TAIL_ROWS@
