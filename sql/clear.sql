-- SPDX-License-Identifier: MIT
-- clear: one call of the server-side function a2_clear (schema.sql), one round trip; its typed
-- caller is src/postgres/calls/clear.hpp.
-- r_wake: the wake-ups the write owes (schema.sql a2_owe_wake: 1 feeds, 2 work, '' or null none),
-- which the store's notifier sends after commit (src/postgres/wake_sender.hpp).
-- $1 session  $2 now ms  $3 if_last or null  $4 cause index or null  $5 cause attempt or null
-- $6 marker id  $7 marker type.
select r.r_cleared, r.r_index, r.r_clear_index, current_setting('a2.wake', true) as r_wake
  from a2_clear($1, $2, $3, $4, $5, $6, $7) r
