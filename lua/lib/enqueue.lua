-- SPDX-License-Identifier: MIT
-- ENQUEUE_LUA: lane-aware queueing for scripts that add events. The including script binds
-- PENDING (p:S:pending) and READY (p:S:ready) and includes META_LUA.
-- Lane pointers live in the base hash: __lane:<byte length of lane>:<lane>:head|tail. Lane tails
-- are read once per lane and tracked in memory, so a batch in one lane links its events without
-- re-reading. A tail at or below the clear boundary is stale (left by a clear) and ignored. A lane
-- emptied earlier in the script (clear_lane) is known to have no tail, and its pointers are
-- deleted at flush_queue only if nothing re-filled it. Call flush_queue() before flush().
--#include meta.lua
local function lane_field(lane, suffix)
  return '__lane:' .. tostring(string.len(lane)) .. ':' .. lane .. ':' .. suffix
end
local queued, ready_now, lane_tails, lane_order = {}, {}, {}, {}
-- Queues index `field` as pending; ready too when unlaned or the first pending event of its lane.
local function enqueue(field, lane)
  -- The score as text: the bytes Redis would make of tonumber(field), without converting twice.
  local score = field
  queued[#queued + 1] = score
  queued[#queued + 1] = field
  if lane == '' then
    ready_now[#ready_now + 1] = score
    ready_now[#ready_now + 1] = field
    return
  end
  put(mkey(field), field .. ':l', lane)
  local tail = lane_tails[lane]
  if tail == nil then
    tail = redis.call('HGET', META, lane_field(lane, 'tail'))
    if tail and tonumber(tail) <= boundary then tail = false end
    lane_order[#lane_order + 1] = lane
  end
  if tail then
    put(mkey(tail), tail .. ':next', field)
  else
    put(META, lane_field(lane, 'head'), field)
    ready_now[#ready_now + 1] = score
    ready_now[#ready_now + 1] = field
  end
  lane_tails[lane] = field
end
-- Records that `lane` became empty during this script.
local function clear_lane(lane)
  if lane_tails[lane] == nil then lane_order[#lane_order + 1] = lane end
  lane_tails[lane] = false
end
-- Buffers the tail pointers (or deletes the pointers of emptied lanes) and adds the queued
-- indexes to the pending and ready sets.
local function flush_queue()
  for _, lane in ipairs(lane_order) do
    if lane_tails[lane] then
      put(META, lane_field(lane, 'tail'), lane_tails[lane])
    else
      redis.call('HDEL', META, lane_field(lane, 'head'), lane_field(lane, 'tail'))
    end
  end
  sliced('ZADD', PENDING, queued)
  sliced('ZADD', READY, ready_now)
end
