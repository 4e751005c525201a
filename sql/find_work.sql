-- SPDX-License-Identifier: MIT
-- find_work (an a2 extension): one page of the work index a2_work (schema.sql), ascending by
-- (next_at, session_id bytewise), read from the index a2_work_due, so its cost follows the page
-- and the log of the index size, never the idle sessions. One round trip; writes nothing.
-- $1, $2 the exclusive cursor (at, session); from the first: (-1, '')
-- $3 due by (only entries with next_at <= $3; all: the largest bigint)  $4 limit
select w.session_id, w.next_at
  from a2_work w
 where (w.next_at, w.session_id collate "C") > ($1::bigint, $2::text collate "C")
   and w.next_at <= $3::bigint
 order by w.next_at, w.session_id collate "C"
 limit $4::bigint
