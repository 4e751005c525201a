-- SPDX-License-Identifier: MIT
-- PRESENCE_LUA (not in seed-R, whose presence scripts are hidden; docs/semantics.md#Q17):
-- helpers for the presence hash p:S:presence. Field = participant; value = the JSON text
--   {"state":<state JSON verbatim>,"expiresAt":<ms>,"source":<source JSON string>}
-- built by concatenation, so the state text round-trips byte for byte (cjson would re-encode
-- numbers with 14 significant digits). `expiresAt` is searched from the end: it is the last
-- `,"expiresAt":` of the value because neither it nor `source` (a JSON string, whose quotes are
-- escaped) can contain that text unescaped.
local function presence_value(state, expires_at, source)
  return '{"state":' .. state .. ',"expiresAt":' .. expires_at .. ',"source":' ..
    cjson.encode(source) .. '}'
end
-- The state text and expiry of a stored value, or nil when it is not in the format above.
local function presence_parse(value)
  local prefix = '{"state":'
  if string.sub(value, 1, #prefix) ~= prefix then return nil end
  local marker, at, from = ',"expiresAt":', nil, 1
  while true do
    local found = string.find(value, marker, from, true)
    if not found then break end
    at, from = found, found + 1
  end
  if not at then return nil end
  local expires_at = string.match(value, '^(%-?%d+),"source":', at + #marker)
  if not expires_at then return nil end
  return string.sub(value, #prefix + 1, at - 1), tonumber(expires_at)
end
-- Deletes the entries expired at `now` (expiresAt <= now) and unreadable ones; returns the live
-- entries as a flat list { participant, stateJson, ... } ordered by participant.
local function presence_live(key, now)
  local all = redis.call('HGETALL', key)
  local live, expired = {}, {}
  for i = 1, #all, 2 do
    local state, expires_at = presence_parse(all[i + 1])
    if state and expires_at > now then
      live[#live + 1] = { all[i], state }
    else
      expired[#expired + 1] = all[i]
    end
  end
  for first = 1, #expired, @A2_LUA_ARGUMENT_SLICE@ do
    redis.call('HDEL', key, unpack(expired, first, math.min(first + @A2_LUA_ARGUMENT_SLICE@ - 1, #expired)))
  end
  table.sort(live, function(a, b) return a[1] < b[1] end)
  local result = {}
  for _, entry in ipairs(live) do
    result[#result + 1] = entry[1]
    result[#result + 1] = entry[2]
  end
  return result
end
