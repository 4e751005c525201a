-- SPDX-License-Identifier: MIT
-- @keys count meta pending meta-split
-- @argv now detail
-- Reads a session's counts (docs/semantics.md#session-counts) and, with detail, its lanes and
-- recorded claims (docs/semantics.md#inspect_session), for list_sessions and inspect_session.
-- Read-only. Scans `pending` (so the cost follows unfinished work, as dead_letters.lua), keeps
-- indexes above the boundary and reads `p, f, l, ch, ce, d, av` of each: fields the original
-- package writes, and a2's `av`. A dead letter is counted dead and still heads its lane.
-- KEYS[1] count  KEYS[2] meta  KEYS[3] pending  KEYS[4] meta-split
-- ARGV[1] now (ms)  ARGV[2] detail: '1' adds lanes and claims
-- Returns { count, boundary, pending, ready, claimed, dead } and with detail also
-- { lane, headIndex, pending }* (lanes, by first pending index) and
-- { index, d|'0', holder, ce|'0' }* (claims, ascending) as two flat lists.
local COUNTER, META, SPLIT = KEYS[1], KEYS[2], KEYS[4]
--#include meta.lua
local counts = redis.call('MGET', COUNTER, SPLIT, CLEAR)
use_split(counts[2], counts[1], counts[3])
local now = tonumber(ARGV[1])
local candidates = {}
for _, field in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
  if tonumber(field) > boundary then candidates[#candidates + 1] = field end
end
local rows = read_fields(candidates, { 'p', 'f', 'l', 'ch', 'ce', 'd', 'av' })
local pending, ready, claimed, dead = 0, 0, 0, 0
local lanes, lane_list, claims = {}, {}, {}
for _, field in ipairs(candidates) do
  local row = rows[field]
  if not row[1] then
    local lane_head = true
    if row[3] and row[3] ~= '' then
      local lane = lanes[row[3]]
      if lane then
        lane_head = false
      else
        lane = { row[3], field, 0 }
        lanes[row[3]] = lane
        lane_list[#lane_list + 1] = lane
      end
      if not row[2] then lane[3] = lane[3] + 1 end
    end
    if row[2] then
      dead = dead + 1
    else
      pending = pending + 1
      if row[4] then
        claims[#claims + 1] = field
        claims[#claims + 1] = row[6] or '0'
        claims[#claims + 1] = row[4]
        claims[#claims + 1] = row[5] or '0'
      end
      if tonumber(row[5] or '0') > now then
        claimed = claimed + 1
      elseif lane_head and tonumber(row[7] or '0') <= now then
        ready = ready + 1
      end
    end
  end
end
local result = { counts[1] or '0', decimal(boundary), pending, ready, claimed, dead }
if ARGV[2] == '1' then
  local flat = {}
  for _, lane in ipairs(lane_list) do
    flat[#flat + 1] = lane[1]
    flat[#flat + 1] = lane[2]
    flat[#flat + 1] = lane[3]
  end
  result[7] = flat
  result[8] = claims
end
return result
