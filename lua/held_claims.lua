-- SPDX-License-Identifier: MIT
-- @keys count meta ready meta-split
-- @argv holder now
-- Lists the live leases of `holder` in the current lifetime (docs/semantics.md#held_claims, an a2
-- extension). Read-only. A lease is only ever on a ready event (a claim takes ready events; a
-- completion, a dead-lettering failure and a clear take the event out of the ready set), so the
-- scan is bounded by the ready set, not the history.
-- KEYS[1] count  KEYS[2] meta  KEYS[3] ready  KEYS[4] meta-split
-- ARGV[1] holder  ARGV[2] now ms
-- Returns { (index, attempt, expiresAt) x k }, ascending by index: the ready events above the
-- boundary, neither processed nor dead-lettered, with ch == holder and ce > now.
-- Commands: ZRANGE, one MGET, one HMGET per metadata hash of the ready events.
local COUNTER, META, SPLIT = KEYS[1], KEYS[2], KEYS[4]
--#include meta.lua
local ready = redis.call('ZRANGE', KEYS[3], 0, -1)
if #ready == 0 then return {} end
local counts = redis.call('MGET', COUNTER, SPLIT, CLEAR)
use_split(counts[2], counts[1], counts[3])
local candidates = {}
for _, field in ipairs(ready) do
  if tonumber(field) > boundary then candidates[#candidates + 1] = field end
end
local rows = read_fields(candidates, { 'ch', 'ce', 'd', 'p', 'f' })
local now = tonumber(ARGV[2])
local result = {}
for _, field in ipairs(candidates) do
  local row = rows[field]
  if row[1] == ARGV[1] and tonumber(row[2] or '0') > now and not row[4] and not row[5] then
    result[#result + 1] = field
    result[#result + 1] = row[3] or '0'
    result[#result + 1] = row[2]
  end
end
return result
