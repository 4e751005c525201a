-- SPDX-License-Identifier: MIT
-- fail_attempt: one call of the server-side function a2_fail_attempt (schema.sql), one round trip.
-- $1 the request as jsonb. Returns the result as jsonb text.
select a2_fail_attempt($1::jsonb)::text
