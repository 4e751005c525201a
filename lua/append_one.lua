-- SPDX-License-Identifier: MIT
-- @keys log count meta pending ready meta-split id work
-- @argv session now id type payload notify
-- Appends one unsettled event without cause, lane, availableAt or origin
-- (docs/semantics.md#append), the most common append of all: append.lua's call for n = 1 with
-- those arguments empty, in six ARGV instead of twelve (the server pays for each argument of a
-- call: docs/redis-layout.md#scripts). Same replies, writes and wake-ups as append.lua.
-- KEYS as append.lua's for n = 1: KEYS[1] log  KEYS[2] count  KEYS[3] meta  KEYS[4] pending
-- KEYS[5] ready  KEYS[6] meta-split  KEYS[7] the event's id key  KEYS[8] work.
-- ARGV[1] session id  ARGV[2] now ms  ARGV[3] id  ARGV[4] type  ARGV[5] payloadJson
-- ARGV[6] notify channel
-- Returns as append.lua.
local COUNTER, META, SPLIT, PENDING, READY = KEYS[2], KEYS[3], KEYS[6], KEYS[4], KEYS[5]
local n = 1
local WORK = KEYS[8]
--#include json.lua
-- Fast path: a fresh id. It issues exactly the commands append.lua's general path would, with the
-- same arguments in the same order (MGET, XADD, MSET, ZADD pending, ZADD ready, ZADD LT work,
-- PUBLISH), without its tables, unpacks and loops. Its MGET reads the counter, split and id key,
-- not the clear boundary, which only an owned id needs: then the boundary's GET completes the
-- reply into the shape id_owners.lua reads, which the general path takes on.
-- FAST_PATH: the test of test/redis/fast_path_test.cpp runs a copy of this script with this
-- line set to false and checks that both give the same replies and the same stored data.
local FAST_PATH = true
local fast_values = nil
if FAST_PATH then
  fast_values = redis.call('MGET', COUNTER, SPLIT, KEYS[7])
  if not fast_values[3] then
    local base = tonumber(fast_values[1] or '0')
    local now, field, payload = ARGV[2], decimal(base + 1), ARGV[5]
    redis.call('XADD', KEYS[1], field .. '-0', 'id', ARGV[3], 'type', ARGV[4], 'payload', payload,
      'created_at', now, 'cause', '', 'lane', '')
    local owner = '[' .. json_string(ARGV[1]) .. ',' .. field .. ']'
    if fast_values[2] then
      redis.call('MSET', KEYS[7], owner, COUNTER, field)
    else
      redis.call('MSET', KEYS[7], owner, COUNTER, field, SPLIT, decimal(base))
    end
    redis.call('ZADD', PENDING, field, field)
    redis.call('ZADD', READY, field, field)
    redis.call('ZADD', WORK, 'LT', now, ARGV[1])
    -- wake.lua's size rule for one entry.
    local message = '{"f":' .. field .. '}'
    if #payload <= 32768 then
      local entry = '[' .. field .. ',' .. json_string(ARGV[3]) .. ',' .. json_string(ARGV[4]) ..
        ',' .. payload .. ']'
      if #entry + 1 <= 32768 then
        message = '{"f":' .. field .. ',"t":' .. now .. ',"e":[' .. entry .. ']}'
      end
    end
    redis.pcall('PUBLISH', ARGV[6], message)
    return { 'ok', field, '1' }
  end
  table.insert(fast_values, 3, redis.call('GET', string.sub(COUNTER, 1, -6) .. 'clear'))
end
-- Otherwise (an owned id: a replay, or an id of another session) the general path, on these
-- arguments in append.lua's layout.
local ARGV = { ARGV[1], ARGV[2], '1', ARGV[3], ARGV[4], ARGV[5], '', '', '0', '', ARGV[6], '' }
--#include append_general.lua
