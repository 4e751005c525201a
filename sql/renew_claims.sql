-- SPDX-License-Identifier: MIT
-- renew_claims: one call of the server-side function a2_renew_claims (schema.sql), one round trip; its typed
-- caller is src/postgres/calls/renew_claims.hpp.
-- r_wake: the wake-ups the write owes (schema.sql a2_owe_wake: 1 feeds, 2 work, '' or null none),
-- which the store's notifier sends after commit (src/postgres/wake_sender.hpp).
-- $1 session  $2 holder  $3 now ms  $4 lease expiry ms  $5 indexes  $6 attempts (parallel).
select r.r_renewed::text as r_renewed, r.r_superseded::text as r_superseded,
       current_setting('a2.wake', true) as r_wake
  from a2_renew_claims($1, $2, $3, $4, $5::bigint[], $6::bigint[]) r
