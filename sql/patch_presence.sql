-- SPDX-License-Identifier: MIT
-- patch_presence: one call of the server-side function a2_patch_presence (schema.sql), one round trip; its typed
-- caller is src/postgres/calls/patch_presence.hpp.
-- $1 session  $2 participant  $3 state (jsonb; JSON null removes)  $4 ttl ms  $5 now ms
-- $6 source or null. Returns the live map as jsonb text.
select a2_patch_presence($1, $2, $3::jsonb, $4, $5, $6)::text as r_presence
