-- SPDX-License-Identifier: MIT
-- release_claims: one call of the server-side function a2_release_claims (schema.sql), one round trip; its typed
-- caller is src/postgres/calls/release_claims.hpp.
-- r_wake: the wake-ups the write owes (schema.sql a2_owe_wake: 1 feeds, 2 work, '' or null none),
-- which the store's notifier sends after commit (src/postgres/wake_sender.hpp).
-- $1 session  $2 holder  $3 now ms  $4 indexes  $5 attempts (parallel)
-- $6 available at ms or null (a snooze; null or not after now: at once).
select r.r_released::text as r_released, r.r_not_held::text as r_not_held,
       current_setting('a2.wake', true) as r_wake
  from a2_release_claims($1, $2, $3, $4::bigint[], $5::bigint[], $6) r
