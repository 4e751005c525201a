-- SPDX-License-Identifier: MIT
-- fail_attempt: one call of the server-side function a2_fail_attempt (schema.sql), one round trip; its typed
-- caller is src/postgres/calls/fail_attempt.hpp.
-- r_wake: the wake-ups the write owes (schema.sql a2_owe_wake: 1 feeds, 2 work, '' or null none),
-- which the store's notifier sends after commit (src/postgres/wake_sender.hpp).
-- $1 session  $2 index  $3 attempt  $4 error  $5 max failures  $6 now ms
-- $7 retry at ms or null (at once).
select r.r_verdict, r.r_failure_count, current_setting('a2.wake', true) as r_wake
  from a2_fail_attempt($1, $2, $3, $4, $5, $6, $7) r
