-- SPDX-License-Identifier: MIT
-- SETTLE_LUA: settles one unfinished event for scripts that include ENQUEUE_LUA. The event leaves
-- the pending and ready sets, and a lane head hands its lane to the next unfinished event (the
-- first successor without `p`); a dead-lettered successor (`f`) becomes head but stays out of
-- the ready set. When the chain ends the lane is recorded as emptied (clear_lane).
--#include meta.lua
--#include enqueue.lua
local function settle(field, lane, next_field)
  redis.call('ZREM', PENDING, field)
  redis.call('ZREM', READY, field)
  if lane == '' then return end
  local head_key = lane_field(lane, 'head')
  if redis.call('HGET', META, head_key) ~= field then return end
  while next_field do
    local row = read_fields({ next_field }, { 'p', 'f', 'next' })[next_field]
    if not row[1] then
      redis.call('HSET', META, head_key, next_field)
      if not row[2] then
        redis.call('ZADD', READY, tonumber(next_field), next_field)
      end
      return
    end
    next_field = row[3]
  end
  clear_lane(lane)
end
