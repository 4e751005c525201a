-- SPDX-License-Identifier: MIT
-- append: one call of the server-side function a2_append (schema.sql), one round trip.
-- $1 the request as jsonb. Returns the result as jsonb text.
select a2_append($1::jsonb)::text
