-- SPDX-License-Identifier: MIT
-- append of one unsettled event without cause, lane or origin (the common case): one call of
-- the server-side function a2_append_one (schema.sql), one round trip.
-- $1 session $2 now ms $3 event id $4 type $5 payload as jsonb text. Returns the new index (a
-- JSON number), or, when a row already holds the id, a2_append's result as jsonb text.
select a2_append_one($1, $2, $3, $4, $5::jsonb)::text
