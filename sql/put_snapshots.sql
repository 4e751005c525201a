-- SPDX-License-Identifier: MIT
-- put_snapshots: one call of the server-side function a2_put_snapshots (schema.sql), one round trip.
-- $1 the request as jsonb. Returns the result as jsonb text.
select a2_put_snapshots($1::jsonb)::text
