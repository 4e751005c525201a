-- SPDX-License-Identifier: MIT
-- claim_available: one call of the server-side function a2_claim_available (schema.sql), one round trip.
-- $1 the request as jsonb. Returns the result as jsonb text.
select a2_claim_available($1::jsonb)::text
