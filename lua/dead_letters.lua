-- SPDX-License-Identifier: MIT
-- @keys log count meta pending meta-split
-- @argv
-- Lists the dead letters of the current lifetime (docs/semantics.md#dead_letters), oldest first.
-- Every unfinished event is in the pending set, so the scan is bounded by unfinished work, not
-- history; only dead letters read their full columns.
-- KEYS[1] log  KEYS[2] count  KEYS[3] meta  KEYS[4] pending  KEYS[5] meta-split
-- No ARGV.
-- Returns a flat list of pairs (streamEntry, columns) where columns are the 14 exposed metadata
-- suffixes in order: p, pa, ri, ch, ce, f, fc, lc, lf, lfa, d, a, e, av (false when absent;
-- kMetaSuffixes in src/redis/codec.hpp).
local COUNTER, META, SPLIT = KEYS[2], KEYS[3], KEYS[5]
--#include meta.lua
local counts = redis.call('MGET', COUNTER, SPLIT, CLEAR)
use_split(counts[2], counts[1], counts[3])
local candidates = {}
for _, field in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
  if tonumber(field) > boundary then candidates[#candidates + 1] = field end
end
local status = read_fields(candidates, { 'p', 'f' })
local dead = {}
for _, field in ipairs(candidates) do
  if status[field][2] and not status[field][1] then dead[#dead + 1] = field end
end
local rows = read_fields(dead, ROW_FIELDS)
local result = {}
for _, field in ipairs(dead) do
  local entries = redis.call('XRANGE', KEYS[1], field .. '-0', field .. '-0')
  if #entries > 0 then
    result[#result + 1] = entries[1]
    result[#result + 1] = rows[field]
  end
end
return result
