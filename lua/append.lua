-- SPDX-License-Identifier: MIT
-- @keys log count meta pending ready meta-split id*n work
-- @argv session now n {id type payload cause lane settled available_at}*n notify origin
-- Appends a batch of events to a session (docs/semantics.md#append), or recognises a replay of one.
-- KEYS[1] log (p:S:log)  KEYS[2] count  KEYS[3] meta  KEYS[4] pending  KEYS[5] ready
-- KEYS[6] meta-split  KEYS[6 + i] id key of event i (p:ids:<escaped id>), i = 1..n
-- KEYS[7 + n] work (p:work, the work index: docs/redis-layout.md#work-index)
-- ARGV[1] session id  ARGV[2] now ms  ARGV[3] n, then 7 per event: id, type, payloadJson,
-- causeJson|'', lane|'', settled '1'|'0', availableAt|'' (set only on an unsettled event and only
-- when after now: the event's `av`, docs/semantics.md#delayed-work); then ARGV[4 + 7n] notify
-- channel, ARGV[5 + 7n] originIndex|''
-- Returns { 'empty', hasPending } | { 'ok', firstIndex, hasPending } |
--   { 'rows', hasPending, (streamEntry, columns) x n } (a replay: the stored rows of its ids,
--   in batch order, columns as in dead_letters.lua) | { 'partial', ownedCount } | { 'foreign', id } |
--   { 'no_parent', causeIndex } | { 'superseded', causeIndex } | { 'cleared', originIndex }
-- Verdict order: empty, foreign/rows/partial, cleared (origin), then each cause in batch order
-- (boundary, range, attempt/dead letter). hasPending is '1' or '0'.
-- An 'ok' with unsettled events lowers the session's work index entry to the earliest of their
-- times (availableAt, else now) with one ZADD LT, before the wake-up.
local COUNTER, META, SPLIT, PENDING, READY = KEYS[2], KEYS[3], KEYS[6], KEYS[4], KEYS[5]
local n = tonumber(ARGV[3])
local WORK = KEYS[7 + n]
--#include json.lua
-- Fast path, the common append: unsettled events without cause, lane or availableAt, no origin,
-- fresh ids (one such event alone is append_one.lua's call, in fewer arguments).
-- It runs before the general code below defines its functions and tables, so it pays for none
-- of them, and it issues exactly the commands the general path would, with the same arguments
-- in the same order (MGET, XADD per event, MSET, ZADD pending, ZADD ready, ZADD LT work,
-- PUBLISH). Its MGET reads the counter, split and id keys, not the clear boundary, which only an
-- owned id needs: when an id turns out to be owned, the boundary's GET completes the reply into
-- the shape id_owners.lua reads, and the general path takes it on and reads nothing again.
-- FAST_PATH: the test of test/redis/fast_path_test.cpp runs a copy of this script with this
-- line set to false and checks that both give the same replies and the same stored data.
local FAST_PATH = true
local fast_values = nil
if FAST_PATH and n > 0 and n <= 100 and ARGV[5 + n * 7] == '' then
  local fast = true
  for o = 3, 3 + (n - 1) * 7, 7 do
    if ARGV[o + 4] ~= '' or ARGV[o + 5] ~= '' or ARGV[o + 6] ~= '0' or ARGV[o + 7] ~= '' then
      fast = false
      break
    end
  end
  if fast then
    -- Counter, split, then the id keys.
    local keys = { COUNTER, SPLIT }
    for i = 1, n do keys[2 + i] = KEYS[6 + i] end
    fast_values = redis.call('MGET', unpack(keys))
    for i = 1, n do
      if fast_values[2 + i] then
        fast = false
        break
      end
    end
  end
  if fast then
    local base = tonumber(fast_values[1] or '0')
    local now, session_json = ARGV[2], json_string(ARGV[1])
    -- MSET arguments (owner records, counter, split when unset), ZADD arguments (score, member;
    -- unlaned events are ready at once, so pending and ready get the same pairs) and the
    -- wake-up entries under wake.lua's size rule. Each index is formatted once (decimal) and
    -- passed as text, also as the score: the same argument bytes Redis makes of the number.
    local owner_writes, queued, entries, bytes = {}, {}, {}, 0
    local last_type, type_json = nil, nil  -- A batch often repeats one type: encoded once.
    for i = 1, n do
      local o = 3 + (i - 1) * 7
      local field = decimal(base + i)
      local payload = ARGV[o + 3]
      redis.call('XADD', KEYS[1], field .. '-0',
        'id', ARGV[o + 1], 'type', ARGV[o + 2], 'payload', payload,
        'created_at', now, 'cause', '', 'lane', '')
      owner_writes[2 * i - 1] = KEYS[6 + i]
      owner_writes[2 * i] = '[' .. session_json .. ',' .. field .. ']'
      queued[2 * i - 1] = field
      queued[2 * i] = field
      if bytes + #payload > 32768 then
        bytes = 32768 + 1
      else
        if ARGV[o + 2] ~= last_type then
          last_type, type_json = ARGV[o + 2], json_string(ARGV[o + 2])
        end
        local entry = '[' .. field .. ',' .. json_string(ARGV[o + 1]) .. ',' .. type_json .. ',' ..
          payload .. ']'
        bytes = bytes + #entry + 1
        if bytes <= 32768 then entries[#entries + 1] = entry end
      end
    end
    local head = queued[2 * n]
    owner_writes[2 * n + 1] = COUNTER
    owner_writes[2 * n + 2] = head
    if not fast_values[2] then
      owner_writes[2 * n + 3] = SPLIT
      owner_writes[2 * n + 4] = decimal(base)
    end
    redis.call('MSET', unpack(owner_writes))
    redis.call('ZADD', PENDING, unpack(queued))
    redis.call('ZADD', READY, unpack(queued))
    redis.call('ZADD', WORK, 'LT', now, ARGV[1])
    local message
    if bytes <= 32768 then
      message = '{"f":' .. head .. ',"t":' .. now .. ',"e":[' .. table.concat(entries, ',') .. ']}'
    else
      message = '{"f":' .. head .. '}'
    end
    redis.pcall('PUBLISH', ARGV[4 + n * 7], message)
    return { 'ok', queued[2], '1' }
  end
  if fast_values then
    table.insert(fast_values, 3, redis.call('GET', string.sub(COUNTER, 1, -6) .. 'clear'))
  end
end
--#include append_general.lua
