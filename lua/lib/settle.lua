-- SPDX-License-Identifier: MIT
-- SETTLE_LUA: settles unfinished events for scripts that include ENQUEUE_LUA. An event leaves
-- the pending and ready sets, and a lane head hands its lane to the next unfinished event (the
-- first successor without `p` that is not settled by this script); a dead-lettered successor
-- (`f`) becomes head but stays out of the ready set. When the chain ends the lane is recorded as
-- emptied (clear_lane).
--#include meta.lua
--#include enqueue.lua
-- The events settled by this script: their `p` may still be buffered (unflushed), so a hand-off
-- walk must not take them for unfinished.
local settled_here = {}
-- Whether a hand-off of this script passed a lane to a next pending event (dead-lettered or
-- not): a completion then lowers the work index entry to now (docs/semantics.md#work-discovery).
local lane_handed_off = false
-- The events settled by this script that headed their lane when they were settled.
local headed_here = {}
-- Hands `lane` on if `field` (settled) headed it.
local function hand_off(field, lane, next_field)
  if lane == '' then return end
  local head_key = lane_field(lane, 'head')
  if redis.call('HGET', META, head_key) ~= field then return end
  headed_here[field] = true
  while next_field do
    local row = read_fields({ next_field }, { 'p', 'f', 'next' })[next_field]
    if not row[1] and not settled_here[next_field] then
      redis.call('HSET', META, head_key, next_field)
      lane_handed_off = true
      if not row[2] then
        redis.call('ZADD', READY, tonumber(next_field), next_field)
      end
      return
    end
    next_field = row[3]
  end
  clear_lane(lane)
end
local function settle(field, lane, next_field)
  settled_here[field] = true
  redis.call('ZREM', PENDING, field)
  redis.call('ZREM', READY, field)
  hand_off(field, lane, next_field)
end
-- Settles several events, given as { field, lane, next } each, with one ZREM per set (for one
-- event the commands of settle), then the hand-offs in order.
local function settle_all(events)
  local fields = {}
  for i, event in ipairs(events) do
    fields[i] = event[1]
    settled_here[event[1]] = true
  end
  sliced('ZREM', PENDING, fields)
  sliced('ZREM', READY, fields)
  for _, event in ipairs(events) do hand_off(event[1], event[2], event[3]) end
end
