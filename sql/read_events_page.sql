-- SPDX-License-Identifier: MIT
-- One page of public events after the cursor, payload as stored JSON text; a cursor below the
-- boundary resumes at the marker. Used by read_events (@A2_READ_PAGE_SIZE@), read_feed_page and the
-- live feed's readAfter (@A2_FEED_PAGE_SIZE@).
-- $1 session  $2 after_index  $3 page size
select session_id, idx, event_id, event_type, payload::text, created_at
  from a2_events
 where session_id = $1
   and idx > $2
   and idx >= coalesce((select clear_index from a2_clears where session_id = $1), 0)
 order by idx
 limit $3
