-- SPDX-License-Identifier: MIT
-- reclaim: one call of the server-side function a2_reclaim (schema.sql), one round trip.
-- $1 the request as jsonb. Returns the result as jsonb text.
select a2_reclaim($1::jsonb)::text
