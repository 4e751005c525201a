-- SPDX-License-Identifier: MIT
-- complete_attempt: one call of the server-side function a2_complete_attempt (schema.sql), one round trip.
-- $1 the request as jsonb. Returns the result as jsonb text.
select a2_complete_attempt($1::jsonb)::text
