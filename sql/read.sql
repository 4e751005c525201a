-- SPDX-License-Identifier: MIT
-- read / read_range: the stored rows of the current lifetime (marker included) in
-- ($2, $3], one statement, so the bounds are one snapshot.
-- $1 session  $2 after_index  $3 through_index (2^53-1 for the head)
select to_jsonb(e)::text
  from a2_events e
 where e.session_id = $1
   and e.idx > $2
   and e.idx <= $3
   and e.idx >= coalesce((select clear_index from a2_clears where session_id = $1), 0)
 order by e.idx
