-- SPDX-License-Identifier: MIT
-- RELEASE_PINS_LUA: releases the snapshot pins of one event (on completion or dead-lettering).
-- `pins` is the event's set p:S:snapshot-pins:<I> of checkpoint refs (JSON [historyKey, "index"]),
-- `counts` the hash p:S:snapshot-pin-counts (ref -> number of pinning events). A ref whose count
-- drops to zero loses its count and its history checkpoint (a head is never deleted here).
local function release_snapshot_pins(pins, counts)
  local refs = redis.call('SMEMBERS', pins)
  if #refs == 0 then return end
  for _, ref in ipairs(refs) do
    local count = redis.call('HINCRBY', counts, ref, -1)
    if count <= 0 then
      redis.call('HDEL', counts, ref)
      local checkpoint = cjson.decode(ref)
      redis.call('ZREMRANGEBYSCORE', checkpoint[1], checkpoint[2], checkpoint[2])
    end
  end
  redis.call('DEL', pins)
end
