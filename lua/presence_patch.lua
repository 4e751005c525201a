-- SPDX-License-Identifier: MIT
-- @keys presence
-- @argv now participant state expires_at source
-- Upserts or removes one participant of a session's presence and returns the live map
-- (docs/semantics.md#patch_presence; the seed's presence scripts are hidden, so this layout is the
-- library's own). Expired entries (expiresAt <= now) are pruned. Presence is not part of the event
-- log: clear and reclaim never touch it.
-- KEYS[1] presence (p:S:presence)
-- ARGV[1] now ms  ARGV[2] participant  ARGV[3] state JSON, or '' to remove the participant
-- ARGV[4] expiresAt ms (now + ttl; ignored on removal)  ARGV[5] presence source
-- Returns { participant, stateJson, ... } of the live entries after the patch, ordered by
-- participant
--#include presence.lua
local now = tonumber(ARGV[1])
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[2])
else
  redis.call('HSET', KEYS[1], ARGV[2], presence_value(ARGV[3], ARGV[4], ARGV[5]))
end
return presence_live(KEYS[1], now)
