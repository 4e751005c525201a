-- SPDX-License-Identifier: MIT
-- ID_OWNERS_LUA: event-id ownership for scripts that add events. One MGET reads the counter,
-- split, clear boundary and the n id keys KEYS[key_offset + 1 .. key_offset + n] (p:ids:<escaped
-- id>, record JSON [session, index]) and applies the first three (use_split). Returns, per id, the
-- raw owner record or false, and the raw counter. A record this session made below its latest
-- clear is free (false).
--#include meta.lua
-- owners_of applies such an MGET reply (`values`) read by the caller itself.
local function owners_of(values, n, session)
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
local function read_owners(key_offset, n, session)
  local keys = { COUNTER, SPLIT, CLEAR }
  for i = 1, n do keys[#keys + 1] = KEYS[key_offset + i] end
  return owners_of(sliced('MGET', nil, keys), n, session)
end
