-- SPDX-License-Identifier: MIT
-- put_snapshots: one call of the server-side function a2_put_snapshots (schema.sql), one round trip; its typed
-- caller is src/postgres/calls/put_snapshots.hpp.
-- $1 session  $2 reducer  $3 now ms  $4 checkpoint indexes  $5 states (jsonb array, parallel)
-- $6 pin checkpoints  $7 pinned event indexes (parallel).
select a2_put_snapshots($1, $2, $3, $4::bigint[], $5::jsonb, $6::bigint[], $7::bigint[])
  as r_done
