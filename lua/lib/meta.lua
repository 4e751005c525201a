-- SPDX-License-Identifier: MIT
-- META_LUA: split-aware metadata access with batched reads and buffered writes.
-- The including script binds COUNTER (p:S:count), META (the base hash p:S:meta) and SPLIT
-- (p:S:meta-split) first.
-- Every call a script makes costs (Upstash bills each one), so the counter, split and clear
-- boundary come from one MGET, metadata from one HMGET per hash (read_fields) and writes from
-- one HSET per hash (put + flush). Buffered writes are invisible until flushed, so a script must
-- never read a field it has buffered.
-- Per-event metadata lives in hashes of @A2_META_CHUNK_SIZE@ (META_CHUNK_SIZE) consecutive indexes,
-- p:S:meta:<floor((I - 1) / @A2_META_CHUNK_SIZE@)>, so no key grows with a session's history. Indexes at or below
-- the split predate chunking and stay in the base hash, which also holds every lane pointer of the
-- session. An unset split means "the current count", so every script that adds events writes the
-- split in its write phase (split_write).
--#include json.lua
local split, split_stored = nil, false
-- The latest clear marker lives beside the counter, p:S:clear, and is read in the same MGET, so a
-- session never cleared pays nothing.
local CLEAR = string.sub(COUNTER, 1, -6) .. 'clear'
local boundary = 0
local function use_split(stored, count, cleared)
  split_stored = stored ~= false
  split = tonumber(stored or count or '0')
  boundary = tonumber(cleared or '0')
end
-- The metadata chunk of index `idx` (a number): -1 for the base hash META.
local function mchunk(idx)
  if split == nil then
    local values = redis.call('MGET', SPLIT, COUNTER, CLEAR)
    use_split(values[1], values[2], values[3])
  end
  if idx <= split then return -1 end
  return math.floor((idx - 1) / @A2_META_CHUNK_SIZE@)
end
-- The key of metadata chunk `chunk` (mchunk's result).
local function mchunk_key(chunk)
  if chunk < 0 then return META end
  return META .. ':' .. decimal(chunk)
end
-- The hash holding the metadata of index `field` (a decimal string).
local function mkey(field) return mchunk_key(mchunk(tonumber(field))) end
-- Appends `SPLIT, split` to an MSET argument list when the split was not stored yet.
local function split_write(args)
  if not split_stored then
    args[#args + 1] = SPLIT
    args[#args + 1] = decimal(split)
  end
end
-- Runs a variadic command in slices of at most @A2_LUA_ARGUMENT_SLICE@ arguments (Lua's unpack limit),
-- concatenating table replies. `key` (or nil) is passed before every slice.
local function sliced(command, key, args)
  local count = #args
  if count == 0 then return {} end
  if count <= @A2_LUA_ARGUMENT_SLICE@ then
    -- One slice (the common case): the reply itself, without copying. Callers only read it.
    local reply
    if key then
      reply = redis.call(command, key, unpack(args))
    else
      reply = redis.call(command, unpack(args))
    end
    if type(reply) == 'table' then return reply end
    return {}
  end
  local results = {}
  for first = 1, #args, @A2_LUA_ARGUMENT_SLICE@ do
    local last = math.min(first + @A2_LUA_ARGUMENT_SLICE@ - 1, #args)
    local reply
    if key then
      reply = redis.call(command, key, unpack(args, first, last))
    else
      reply = redis.call(command, unpack(args, first, last))
    end
    if type(reply) == 'table' then
      for _, value in ipairs(reply) do results[#results + 1] = value end
    end
  end
  return results
end
-- Reads `suffixes` of every index in `fields` with one HMGET per hash.
-- Returns rows[field][column] (false when absent).
local function read_fields(fields, suffixes)
  if #fields == 0 then return {} end
  local groups, order = {}, {}
  for _, field in ipairs(fields) do
    local key = mkey(field)
    local group = groups[key]
    if not group then
      group = { fields = {}, names = {} }
      groups[key] = group
      order[#order + 1] = key
    end
    group.fields[#group.fields + 1] = field
    for _, suffix in ipairs(suffixes) do
      group.names[#group.names + 1] = field .. ':' .. suffix
    end
  end
  local rows = {}
  for _, key in ipairs(order) do
    local group = groups[key]
    local values = sliced('HMGET', key, group.names)
    for position, field in ipairs(group.fields) do
      local row = {}
      for column = 1, #suffixes do
        row[column] = values[(position - 1) * #suffixes + column]
      end
      rows[field] = row
    end
  end
  return rows
end
-- The 14 columns of a stored row, in kMetaSuffixes order (src/redis/codec.hpp).
local ROW_FIELDS = { 'p', 'pa', 'ri', 'ch', 'ce', 'f', 'fc', 'lc', 'lf', 'lfa', 'd', 'a', 'e', 'av' }
local writes, write_order = {}, {}
-- Buffers one hash field write until flush().
local function put(key, field, value)
  local fields = writes[key]
  if not fields then
    fields = {}
    writes[key] = fields
    write_order[#write_order + 1] = key
  end
  fields[#fields + 1] = field
  fields[#fields + 1] = value
end
-- Writes the buffered fields, one HSET per hash.
local function flush()
  if #write_order == 0 then return end
  for _, key in ipairs(write_order) do sliced('HSET', key, writes[key]) end
  writes, write_order = {}, {}
end
