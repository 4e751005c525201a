-- SPDX-License-Identifier: MIT
-- head: the session's head index (0: none) and clear boundary (0: never cleared), in one
-- statement (one snapshot), without any event column: the head is the last entry of the
-- primary key (session_id, idx), the boundary the a2_clears row.
-- $1 session
select coalesce((select idx from a2_events where session_id = $1 order by idx desc limit 1), 0)
         as head_index,
       coalesce((select clear_index from a2_clears where session_id = $1), 0) as clear_index
