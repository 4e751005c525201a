-- SPDX-License-Identifier: MIT
-- clear: one call of the server-side function a2_clear (schema.sql), one round trip.
-- $1 the request as jsonb. Returns the result as jsonb text.
select a2_clear($1::jsonb)::text
