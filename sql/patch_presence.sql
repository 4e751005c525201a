-- SPDX-License-Identifier: MIT
-- patch_presence: one call of the server-side function a2_patch_presence (schema.sql), one round trip.
-- $1 the request as jsonb. Returns the result as jsonb text.
select a2_patch_presence($1::jsonb)::text
