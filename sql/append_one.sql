-- SPDX-License-Identifier: MIT
-- append_one: one call of the server-side function a2_append_one_by_reply (schema.sql), one round trip; its typed
-- caller is src/postgres/calls/append_one.hpp.
-- r_wake: the wake-ups the write owes (schema.sql a2_append_wake, a2_owe_wake: 1 feeds, 2 work,
-- '' or null none), which the store's notifier sends after commit (src/postgres/wake_sender.hpp).
-- One unsettled event without cause, lane or origin (the common case).
-- $1 session  $2 now ms  $3 event id  $4 type  $5 payload (jsonb)  $6 check_id (false: the store
-- drew the id, so the function skips its probe; schema.sql). r_index: the new index, or
-- null when a row already held the id; then r_rows holds the replayed rows, as append's, in one
-- JSON cell (schema.sql a2_events_json; null for a new event): four columns on every call
-- instead of the 22 stored-event columns that a new event would carry empty.
select r.r_index, r.r_has_pending, a2_append_wake(r.r_index) as r_wake,
       a2_events_json(r.r_events) as r_rows
  from a2_append_one_by_reply($1, $2, $3, $4, $5::jsonb, $6::boolean) r
