-- SPDX-License-Identifier: MIT
-- list_sessions: one page of the sessions holding an event, in the order of the primary key
-- (session_id, idx) after the cursor, with their counts (a2_session_counts). The ids come from a
-- skip scan of the primary key (one index probe per session, never a read of every row); one
-- more id than the page is read to tell whether a next page exists. Read-only.
-- $1 cursor (the previous page's last id; '' from the start)  $2 limit  $3 now (ms)
with recursive ids (session_id, n) as (
  (select e.session_id, 1::bigint from a2_events e
    where e.session_id > $1::text order by e.session_id limit 1)
  union all
  select (select e.session_id from a2_events e
           where e.session_id > ids.session_id order by e.session_id limit 1), ids.n + 1
    from ids
   where ids.session_id is not null and ids.n <= $2::bigint
)
select ids.session_id, c.r_head as head, c.r_clear_index as clear_index, c.r_pending as pending,
       c.r_ready as ready, c.r_claimed as claimed, c.r_dead as dead
  from ids
 cross join lateral a2_session_counts(ids.session_id, $3::bigint) c
 where ids.session_id is not null
 order by ids.n
