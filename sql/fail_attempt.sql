-- SPDX-License-Identifier: MIT
-- fail_attempt: one call of the server-side function a2_fail_attempt (schema.sql), one round trip; its typed
-- caller is src/postgres/calls/fail_attempt.hpp.
-- $1 session  $2 index  $3 attempt  $4 error  $5 max failures  $6 now ms
-- $7 retry at ms or null (at once).
select r.r_verdict, r.r_failure_count
  from a2_fail_attempt($1, $2, $3, $4, $5, $6, $7) r
