-- SPDX-License-Identifier: MIT
-- ID_OWNERS_LUA: event-id ownership for scripts that add events. One MGET reads the counter,
-- split, clear boundary and the n id keys KEYS[key_offset + 1 .. key_offset + n] (p:ids:<escaped
-- id>, record JSON [session, index]) and applies the first three (use_split). Returns, per id, the
-- raw owner record or false, and the raw counter. A record this session made below its latest
-- clear is free (false).
--#include meta.lua
local function read_owners(key_offset, n, session)
  local keys = { COUNTER, SPLIT, CLEAR }
  for i = 1, n do keys[#keys + 1] = KEYS[key_offset + i] end
  local values = sliced('MGET', nil, keys)
  use_split(values[2], values[1], values[3])
  local owners = {}
  for i = 1, n do
    local owner = values[3 + i]
    if owner then
      local rec = cjson.decode(owner)
      if rec[1] == session and tonumber(rec[2]) < boundary then owner = false end
    end
    owners[i] = owner
  end
  return owners, values[1]
end
