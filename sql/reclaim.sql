-- SPDX-License-Identifier: MIT
-- reclaim: one call of the server-side function a2_reclaim (schema.sql), one round trip; its typed
-- caller is src/postgres/calls/reclaim.hpp.
-- $1 session  $2 batch size.
select r.r_deleted, r.r_done
  from a2_reclaim($1, $2) r
