-- SPDX-License-Identifier: MIT
-- sweep_work (an a2 extension): one call of the server-side function a2_sweep_work
-- (schema.sql), one round trip; its typed caller is src/postgres/calls/sweep_work.hpp.
-- $1 now ms. One row per session whose work index entry the sweep added or moved earlier.
select r.r_session_id, r.r_at from a2_sweep_work($1) r order by r.r_at, r.r_session_id collate "C"
