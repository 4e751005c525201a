-- SPDX-License-Identifier: MIT
-- read_presence: the live presence map of a session as jsonb text.
-- $1 session  $2 now (ms)
select coalesce(jsonb_object_agg(participant, state), '{}'::jsonb)::text
  from a2_presence
 where ns = $1 and expires_at > $2
