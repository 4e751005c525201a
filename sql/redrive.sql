-- SPDX-License-Identifier: MIT
-- redrive: one call of the server-side function a2_redrive (schema.sql), one round trip; its typed
-- caller is src/postgres/calls/redrive.hpp.
-- r_wake: the wake-ups the write owes (schema.sql a2_owe_wake: 1 feeds, 2 work, '' or null none),
-- which the store's notifier sends after commit (src/postgres/wake_sender.hpp).
-- $1 session  $2 index  $3 action (retry|skip)  $4 now ms.
select r.r_redriven, r.r_has_pending, current_setting('a2.wake', true) as r_wake
  from a2_redrive($1, $2, $3, $4) r
