-- SPDX-License-Identifier: MIT
-- redrive: one call of the server-side function a2_redrive (schema.sql), one round trip.
-- $1 the request as jsonb. Returns the result as jsonb text.
select a2_redrive($1::jsonb)::text
