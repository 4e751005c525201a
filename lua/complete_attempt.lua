-- SPDX-License-Identifier: MIT
-- @keys log count meta pending ready pins snapshot-pin-counts meta-split id*n work
-- @argv session now index attempt n {id type payload lane settled available_at}*n notify holder expires_at max_events
-- Completes the current attempt of a claimed event and appends its children atomically
-- (docs/semantics.md#complete_attempt), or recognises a retry of a completion whose acknowledgement
-- was lost.
-- KEYS[1] log  KEYS[2] count  KEYS[3] meta  KEYS[4] pending  KEYS[5] ready
-- KEYS[6] snapshot-pins:<parent index>  KEYS[7] snapshot-pin-counts  KEYS[8] meta-split
-- KEYS[8 + i] id key of child i, i = 1..n  KEYS[9 + n] work (p:work, the work index:
-- docs/redis-layout.md#work-index)
-- ARGV[1] session id  ARGV[2] now ms  ARGV[3] parent index  ARGV[4] attempt  ARGV[5] n, then 6
-- per child: id, type, payloadJson, lane|'', settled '1'|'0', availableAt|'' (as in append.lua:
-- the child's `av`); then ARGV[6 + 6n] notify channel, and claim_next
-- (docs/semantics.md#claim_next): ARGV[7 + 6n] holder|'' (none), ARGV[8 + 6n] expiresAt|'',
-- ARGV[9 + 6n] maxEvents|''
-- Returns the completion's reply C = { 'superseded' } | { 'missing' } |
--   { 'partial' } (a replay that does not match) | { 'partial', childId } (a child id already
--   owned) | { 'rows', (streamEntry, columns) x n } (a replay: its children as stored at the
--   start of the call, lua/lib/complete.lua) | { 'ok', firstChildIndex }; with a claim_next
--   holder a verdict that is not an error (superseded, rows, ok) comes as { C, claimReply },
--   claimReply being claim_available.lua's reply (lua/lib/claim.lua) for the state after the
--   completion.
-- Verdict order: parent at or below the boundary (superseded), above the head (missing);
-- parent already processed: replay checks (superseded / partial / rows); else the fence
-- (superseded), a child id already owned (partial), then apply.
-- The work index (lua/lib/complete.lua, lua/lib/claim.lua): without claim_next an applied
-- completion with unsettled children or a lane hand-off lowers the entry (ZADD LT); with
-- claim_next only the claim sets it.
local COUNTER, META, SPLIT, PENDING, READY = KEYS[2], KEYS[3], KEYS[8], KEYS[4], KEYS[5]
local PIN_COUNTS = KEYS[7]
local parent = ARGV[3]
local attempt = tonumber(ARGV[4])
local n = tonumber(ARGV[5])
local WORK = KEYS[9 + n]
--#include json.lua
--#include release_pins.lua
-- Fast path, the common completion: the current attempt of a claimed, unprocessed, unlaned parent,
-- with fresh unsettled children without lane or availableAt. It runs before the general code below defines its
-- functions and tables, so it pays for none of them, and it issues exactly the commands the
-- general path would, with the same arguments in the same order (MGET, HMGET, HDEL, ZREM pending,
-- ZREM ready, the pin release, XADD per child, MSET, ZADD pending, ZADD ready, HSET, ZADD LT
-- work without claim_next, PUBLISH).
-- Anything else goes to the general path with what the fast path read (the MGET reply and the
-- parent's row), so nothing is read twice. With a claim_next holder it hands its reply to the
-- claim at the end (lua/lib/claim.lua), which runs the same after either path.
-- FAST_PATH: the test of test/redis/fast_path_test.cpp runs a copy of this script with this
-- line set to false and checks that both give the same replies and the same stored data.
local FAST_PATH = true
local fast_values, fast_row, fast_reply = nil, nil, nil
local next_at = 7 + n * 6
if FAST_PATH and n <= 100 then
  local fast = true
  for o = 5, 5 + (n - 1) * 6, 6 do
    if ARGV[o + 4] ~= '' or ARGV[o + 5] ~= '0' or ARGV[o + 6] ~= '' then
      fast = false
      break
    end
  end
  local split, total, boundary, parent_key
  if fast then
    -- The split-aware MGET of id_owners.lua: counter, split, clear boundary, then the id keys.
    local keys = { COUNTER, SPLIT, string.sub(COUNTER, 1, -6) .. 'clear' }
    for i = 1, n do keys[3 + i] = KEYS[8 + i] end
    fast_values = redis.call('MGET', unpack(keys))
    for i = 1, n do
      if fast_values[3 + i] then
        fast = false
        break
      end
    end
    total = tonumber(fast_values[1] or '0')
    split = tonumber(fast_values[2] or fast_values[1] or '0')
    boundary = tonumber(fast_values[3] or '0')
    local index = tonumber(parent)
    if index <= boundary or index < 1 or index > total then fast = false end
    if fast then
      -- meta.lua's mkey and read_fields for the parent.
      parent_key = META
      if index > split then parent_key = META .. ':' .. decimal(math.floor((index - 1) / @A2_META_CHUNK_SIZE@)) end
      fast_row = redis.call('HMGET', parent_key, parent .. ':d', parent .. ':p', parent .. ':pa',
        parent .. ':ri', parent .. ':ch', parent .. ':f', parent .. ':lfa', parent .. ':l',
        parent .. ':next')
      if fast_row[2] or (fast_row[8] and fast_row[8] ~= '') or
         tonumber(fast_row[1] or '0') ~= attempt or not fast_row[5] or fast_row[6] or
         tonumber(fast_row[7] or '0') == attempt then
        fast = false
      end
    end
  end
  if fast then
    local now, head = ARGV[2], nil
    local returned_ids = {}
    for i = 1, n do returned_ids[i] = json_string(ARGV[5 + (i - 1) * 6 + 1]) end
    redis.call('HDEL', parent_key, parent .. ':ch', parent .. ':ce')
    redis.call('ZREM', PENDING, parent)
    redis.call('ZREM', READY, parent)
    release_snapshot_pins(KEYS[6], KEYS[7])
    if n > 0 then
      local cause = '{"index":' .. decimal(tonumber(parent)) .. ',"attempt":' .. decimal(attempt) ..
        '}'
      local session_json = json_string(ARGV[1])
      -- As in append.lua's fast path: each index formatted once, also used as its score.
      -- events: the wake-up's entries joined by ',', or nil when they are over the size rule.
      local events = nil
      if n == 1 then
        -- One child (the usual completion): the commands of the loop below for n = 1, with the
        -- same arguments, without its tables.
        head = decimal(total + 1)
        local payload = ARGV[8]
        redis.call('XADD', KEYS[1], head .. '-0',
          'id', ARGV[6], 'type', ARGV[7], 'payload', payload,
          'created_at', now, 'cause', cause, 'lane', '')
        local owner = '[' .. session_json .. ',' .. head .. ']'
        if fast_values[2] then
          redis.call('MSET', KEYS[9], owner, COUNTER, head)
        else
          redis.call('MSET', KEYS[9], owner, COUNTER, head, SPLIT, decimal(split))
        end
        redis.call('ZADD', PENDING, head, head)
        redis.call('ZADD', READY, head, head)
        if #payload <= 32768 then
          local entry = '[' .. head .. ',' .. returned_ids[1] .. ',' .. json_string(ARGV[7]) ..
            ',' .. payload .. ']'
          if #entry + 1 <= 32768 then events = entry end
        end
      else
        local owner_writes, queued, entries, bytes = {}, {}, {}, 0
        for i = 1, n do
          local o = 5 + (i - 1) * 6
          local field = decimal(total + i)
          local payload = ARGV[o + 3]
          redis.call('XADD', KEYS[1], field .. '-0',
            'id', ARGV[o + 1], 'type', ARGV[o + 2], 'payload', payload,
            'created_at', now, 'cause', cause, 'lane', '')
          owner_writes[2 * i - 1] = KEYS[8 + i]
          owner_writes[2 * i] = '[' .. session_json .. ',' .. field .. ']'
          queued[2 * i - 1] = field
          queued[2 * i] = field
          if bytes + #payload > 32768 then
            bytes = 32768 + 1
          else
            local entry = '[' .. field .. ',' .. returned_ids[i] .. ',' ..
              json_string(ARGV[o + 2]) .. ',' .. payload .. ']'
            bytes = bytes + #entry + 1
            if bytes <= 32768 then entries[#entries + 1] = entry end
          end
        end
        head = queued[2 * n]
        owner_writes[2 * n + 1] = COUNTER
        owner_writes[2 * n + 2] = head
        if not fast_values[2] then
          owner_writes[2 * n + 3] = SPLIT
          owner_writes[2 * n + 4] = decimal(split)
        end
        redis.call('MSET', unpack(owner_writes))
        redis.call('ZADD', PENDING, unpack(queued))
        redis.call('ZADD', READY, unpack(queued))
        if bytes <= 32768 then events = table.concat(entries, ',') end
      end
      -- With claim_next the work index entry is not lowered here (the claim at the end sets
      -- it): the wake-up says so, as wake.lua's no_work does, so work watches do not report it.
      local tail = '}'
      if (ARGV[next_at] or '') ~= '' then tail = ',"w":0}' end
      local message
      if events then
        message = '{"f":' .. head .. ',"t":' .. now .. ',"e":[' .. events .. ']' .. tail
      else
        message = '{"f":' .. head .. tail
      end
      redis.call('HSET', parent_key, parent .. ':p', now, parent .. ':pa', ARGV[4],
        parent .. ':ri', '[' .. table.concat(returned_ids, ',') .. ']')
      if (ARGV[next_at] or '') == '' then
        redis.call('ZADD', WORK, 'LT', now, ARGV[1])
      end
      redis.pcall('PUBLISH', ARGV[6 + n * 6], message)
    else
      redis.call('HSET', parent_key, parent .. ':p', now, parent .. ':pa', ARGV[4],
        parent .. ':ri', '[]')
    end
    if (ARGV[next_at] or '') == '' then return { 'ok', decimal(total + 1) } end
    fast_reply = { 'ok', decimal(total + 1) }
  end
end
--#include meta.lua
--#include complete.lua
--#include id_owners.lua
--#include claim.lua
local reply = fast_reply
if reply then
  use_split(fast_values[2], fast_values[1], fast_values[3])
else
  local owners, count
  if fast_values then
    owners, count = owners_of(fast_values, n, ARGV[1])
  else
    owners, count = read_owners(8, n, ARGV[1])
  end
  local total = tonumber(count or '0')
  local c = { parent = parent, attempt = attempt, attempt_text = ARGV[4], n = n, at = 5,
    key_at = 8, pins = KEYS[6] }
  reply = completion_place(c, total)
  if not reply then
    local row = fast_row or read_fields({ parent }, COMPLETION_FIELDS)[parent]
    reply = completion_check(c, row, owners, ARGV[1])
    if not reply then
      apply_completions({ { c, row } }, total, ARGV[1], ARGV[2], ARGV[6 + n * 6],
        (ARGV[next_at] or '') == '')
      reply = { 'ok', decimal(total + 1) }
    end
  end
end
if reply[1] == 'missing' or reply[1] == 'partial' then return reply end
local next_reply = claim_next(next_at, READY, ARGV[2])
if next_reply then return { reply, next_reply } end
return reply
