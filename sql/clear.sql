-- SPDX-License-Identifier: MIT
-- clear: one call of the server-side function a2_clear (schema.sql), one round trip; its typed
-- caller is src/postgres/calls/clear.hpp.
-- $1 session  $2 now ms  $3 if_last or null  $4 cause index or null  $5 cause attempt or null
-- $6 marker id  $7 marker type.
select r.r_cleared, r.r_index, r.r_clear_index
  from a2_clear($1, $2, $3, $4, $5, $6, $7) r
