-- SPDX-License-Identifier: MIT
-- @keys moved-log count meta meta-split id*n
-- @argv session pin_prefix n {index id}*n
-- Deletes one reclaim batch (docs/semantics.md#reclaim): the listed entries below the latest clear
-- and everything that names them (the 16 metadata suffixes, lane pointers naming them, their pin
-- sets, and id records that still name exactly [session, index]: an id reused in the new
-- lifetime keeps its owner). When the moved log is then empty it is deleted; when no moved log
-- remains the old checkpoints are swept and done = 1.
-- KEYS[1] moved log (p:S:cleared:<marker>)  KEYS[2] count  KEYS[3] meta  KEYS[4] meta-split
-- KEYS[4 + i] id key of entry i, i = 1..n
-- ARGV[1] session id  ARGV[2] pin key prefix (p:S:snapshot-pins:)  ARGV[3] n, then per entry:
-- ARGV[3 + 2i - 1] index, ARGV[3 + 2i] id
-- Returns { removed, done } (removed is XDEL's integer reply, so concurrent reclaims of the same
-- batch count each entry once; done is 0 or 1)
local COUNTER, META, SPLIT = KEYS[2], KEYS[3], KEYS[4]
--#include meta.lua
--#include sweep_checkpoints.lua
local function lane_field(lane, suffix)
  return '__lane:' .. tostring(string.len(lane)) .. ':' .. lane .. ':' .. suffix
end
local session = string.sub(COUNTER, 1, -6)
local counts = redis.call('MGET', COUNTER, SPLIT, CLEAR)
use_split(counts[2], counts[1], counts[3])
local fields, id_keys, indexes, stream_ids, pin_keys, deleted = {}, {}, {}, {}, {}, {}
-- A concurrent reclaim may list the same batch; only XDEL says who removed it.
local removed = 0
for i = 1, tonumber(ARGV[3]) do
  local field = ARGV[3 + (i - 1) * 2 + 1]
  if tonumber(field) < boundary then
    fields[#fields + 1] = field
    id_keys[#fields] = KEYS[4 + i]
    indexes[#fields] = tonumber(field)
    stream_ids[#fields] = field .. '-0'
    pin_keys[#fields] = ARGV[2] .. field
    deleted[field] = true
  end
end
if #fields > 0 then
  local lanes, seen, pointers = read_fields(fields, { 'l' }), {}, {}
  for _, field in ipairs(fields) do
    local lane = lanes[field][1]
    if lane and lane ~= '' and not seen[lane] then
      seen[lane] = true
      pointers[#pointers + 1] = lane_field(lane, 'head')
      pointers[#pointers + 1] = lane_field(lane, 'tail')
    end
  end
  if #pointers > 0 then
    local values = sliced('HMGET', META, pointers)
    local stale = {}
    for i = 1, #pointers do
      if values[i] and deleted[values[i]] then stale[#stale + 1] = pointers[i] end
    end
    if #stale > 0 then sliced('HDEL', META, stale) end
  end
  local suffixes = { 'l', 'next', 'p', 'pa', 'ri', 'ch', 'ce', 'f', 'fc', 'lc', 'lf', 'lfa', 'd', 'a', 'e',
    'av' }
  local columns, order = {}, {}
  for _, field in ipairs(fields) do
    local key = mkey(field)
    if not columns[key] then
      columns[key] = {}
      order[#order + 1] = key
    end
    for _, suffix in ipairs(suffixes) do
      columns[key][#columns[key] + 1] = field .. ':' .. suffix
    end
  end
  for _, key in ipairs(order) do sliced('HDEL', key, columns[key]) end
  sliced('DEL', nil, pin_keys)
  local owners, stale_ids = sliced('MGET', nil, id_keys), {}
  for i = 1, #fields do
    if owners[i] then
      local rec = cjson.decode(owners[i])
      if rec[1] == ARGV[1] and tonumber(rec[2]) == indexes[i] then
        stale_ids[#stale_ids + 1] = id_keys[i]
      end
    end
  end
  if #stale_ids > 0 then sliced('DEL', nil, stale_ids) end
  removed = 0
  for first = 1, #stream_ids, @A2_LUA_ARGUMENT_SLICE@ do
    removed = removed + redis.call('XDEL', KEYS[1], unpack(stream_ids, first, math.min(first + @A2_LUA_ARGUMENT_SLICE@ - 1, #stream_ids)))
  end
end
local done = 0
if redis.call('XLEN', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', session .. 'cleared', KEYS[1])
  if redis.call('SCARD', session .. 'cleared') == 0 then
    sweep_checkpoints(session, boundary)
    done = 1
  end
end
return { removed, done }
