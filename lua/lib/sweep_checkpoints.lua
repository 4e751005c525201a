-- SPDX-License-Identifier: MIT
-- SWEEP_CHECKPOINTS_LUA: removes every registered reducer's checkpoints below the latest clear,
-- and the pin counts that name them. `session` is the session key prefix (p:S:). Snapshot writes
-- register each reducer in p:S:snap-reducers, so no key scan is needed.
--#include json.lua
local function sweep_checkpoints(session, boundary)
  for _, reducer in ipairs(redis.call('SMEMBERS', session .. 'snap-reducers')) do
    local head_key = session .. 'snap:' .. reducer
    local head = redis.call('GET', head_key)
    if head and tonumber(cjson.decode(head)['index']) < boundary then
      redis.call('DEL', head_key)
    end
    redis.call('ZREMRANGEBYSCORE', session .. 'snap-history:' .. reducer, '-inf', '(' .. decimal(boundary))
  end
  local counts_key = session .. 'snapshot-pin-counts'
  local counts = redis.call('HGETALL', counts_key)
  local stale = {}
  for i = 1, #counts, 2 do
    if tonumber(cjson.decode(counts[i])[2]) < boundary then stale[#stale + 1] = counts[i] end
  end
  -- In slices of @A2_LUA_ARGUMENT_SLICE@, like META_LUA's sliced (this fragment does not need META_LUA).
  for first = 1, #stale, @A2_LUA_ARGUMENT_SLICE@ do
    redis.call('HDEL', counts_key, unpack(stale, first, math.min(first + @A2_LUA_ARGUMENT_SLICE@ - 1, #stale)))
  end
end
