-- SPDX-License-Identifier: MIT
-- renew_claims: one call of the server-side function a2_renew_claims (schema.sql), one round trip.
-- $1 the request as jsonb. Returns the result as jsonb text.
select a2_renew_claims($1::jsonb)::text
