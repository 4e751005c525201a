-- SPDX-License-Identifier: MIT
-- @keys count meta ready meta-split work
-- @argv now
-- One session of the safety sweep (docs/semantics.md#sweep_work, an a2 extension): lowers the
-- session's work index entry to the earliest time one of its ready events can be claimed (a held
-- event from its lease end `ce`, a delayed one from its `av`, any other from now). For sessions
-- the original package wrote to, which does not keep the index; for a session only a2 wrote to
-- the entry is already as early (docs/semantics.md#I20) and nothing changes.
-- KEYS[1] count  KEYS[2] meta  KEYS[3] ready  KEYS[4] meta-split  KEYS[5] work (p:work)
-- ARGV[1] now ms
-- Returns the new time when the entry was added or moved earlier, else false.
-- Commands: ZRANGE ready; when it is not empty one MGET (split and boundary), one HMGET per
-- metadata hash of the ready events and ZADD LT CH. The ready set holds only the current
-- lifetime (a clear unlinks it), so the boundary needs no check.
local COUNTER, META, SPLIT, WORK = KEYS[1], KEYS[2], KEYS[4], KEYS[5]
--#include meta.lua
--#include work.lua
local ready = redis.call('ZRANGE', KEYS[3], 0, -1)
if #ready == 0 then return false end
local now = tonumber(ARGV[1])
local rows = read_fields(ready, { 'ce', 'av' })
local earliest = nil
for _, field in ipairs(ready) do
  local row = rows[field]
  local expires = tonumber(row[1] or '0')
  local available = tonumber(row[2] or '0')
  local at = now
  if expires > now then
    at = expires
  elseif available > now then
    at = available
  end
  if not earliest or at < earliest then earliest = at end
  if earliest <= now then break end
end
local at = decimal(math.floor(earliest))
if redis.call('ZADD', WORK, 'LT', 'CH', at, WORK_SESSION) == 0 then return false end
return at
