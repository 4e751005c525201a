-- SPDX-License-Identifier: MIT
-- redrive: one call of the server-side function a2_redrive (schema.sql), one round trip; its typed
-- caller is src/postgres/calls/redrive.hpp.
-- $1 session  $2 index  $3 action (retry|skip)  $4 now ms.
select r.r_redriven, r.r_has_pending
  from a2_redrive($1, $2, $3, $4) r
