-- SPDX-License-Identifier: MIT
-- append of one unsettled event without cause, lane or origin (the common case): one call of
-- the server-side function a2_append_one (schema.sql), one round trip.
-- $1 session $2 now ms $3 event id $4 type $5 payload as jsonb text. Returns the new index, or
-- null when a row already holds the id (then append.sql decides replay or foreign).
select a2_append_one($1, $2, $3, $4, $5::jsonb)
