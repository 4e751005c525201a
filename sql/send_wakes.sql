-- SPDX-License-Identifier: MIT
-- send_wakes: one round of the store's notifier (src/postgres/wake_sender.hpp), on its own
-- connection, in autocommit: the wake-ups of the writes that committed since the last round,
-- each session once per channel, all sent at this statement's commit.
-- $1 sessions whose feeds to wake (a2_notify)  $2 sessions with new work (a2_notify_work).
-- Returns how many of each it sent.
select (select count(a2_notify(s)) from unnest($1::text[]) s) as events,
       (select count(a2_notify_work(s)) from unnest($2::text[]) s) as work
