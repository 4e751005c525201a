-- SPDX-License-Identifier: MIT
-- @keys log count meta pending ready meta-split work
-- @argv holder now expires_at max_events excluded {index}*excluded
-- Claims the available ready events of a session, all of them or the maxEvents lowest
-- (docs/semantics.md#claim_available): ready, not excluded, its claim absent or expired and not
-- delayed (its `av` absent or not after now). The ready set is a subset of the pending set, so an
-- empty ready set is enough to report 'settled'.
-- KEYS[1] log  KEYS[2] count  KEYS[3] meta  KEYS[4] pending  KEYS[5] ready  KEYS[6] meta-split
-- KEYS[7] work (p:work, the work index: docs/redis-layout.md#work-index)
-- ARGV[1] holder  ARGV[2] now ms  ARGV[3] expiresAt ms  ARGV[4] maxEvents|'' (no limit)
-- ARGV[5] excludedCount  ARGV[5 + i] excluded index
-- Returns { 'claimed', count, now, holder, expiresAt, boundary, (entry, row) x count }
--   | { 'busy', retryAtMs } | { 'settled' } | { 'missing', index }; row is false when none of
--   the event's claim columns (ce d fc a e lf lfa av) is set (attempt 1, no failures, first
--   claimed now), else { attempt, failureCount, lastError|false, firstClaimedAt,
--   lastFailedAt|false, lastFailedAttempt|false, availableAt|false }; entry is the stream
--   entry's id and six values, or the entry whole (lua/lib/entries.lua put_entry,
--   lua/lib/claim.lua).
-- A held candidate (live lease) adds its lease end to retryAt, a delayed one its `av`; the
-- candidates after the maxEvents-th claim are not looked at.
-- Without exclusions the claim then sets the session's work index entry with one command
-- (lua/lib/claim.lua): ZREM on 'settled', ZADD retryAt on 'busy', ZADD LT now when it stopped
-- at maxEvents, else ZADD of the earliest of the lease end and retryAt; with exclusions nothing.
-- 'missing' (a ready index without a stream entry) returns before any buffered write is
-- flushed, so nothing changes (the client maps it to STORE_UNAVAILABLE, docs/semantics.md#Q25).
local COUNTER, META, SPLIT, WORK = KEYS[2], KEYS[3], KEYS[6], KEYS[7]
--#include json.lua
--#include entries.lua
-- Fast path, the common claim: no excluded indexes and every ready event's metadata in one hash.
-- It runs before the general code below defines its functions and tables, so it pays for none
-- of them. It issues the commands the general path issues for fewer than 16 candidates in one
-- hash (ZRANGE, MGET of mkey, HMGET, XRANGE per run of claimable indexes (entries.lua), HSET);
-- for more, the general path asks the hash's HLEN first and may skip or replace the HMGET. When
-- the ready events span several hashes it hands what it read to the general path. Both stop
-- after the maxEvents-th claim.
-- FAST_PATH: the test of test/redis/fast_path_test.cpp runs a copy of this script with this
-- line set to false and checks that both give the same replies and the same stored data.
local FAST_PATH = true
local fast_ready, fast_bounds = nil, nil
local limit = tonumber(ARGV[4])  -- nil: no limit.
if FAST_PATH and ARGV[5] == '0' then
  -- At most 101 entries: the fast path takes at most 100; a longer set goes to the general
  -- path, which reads it in chunks when the claim is bounded.
  fast_ready = redis.call('ZRANGE', KEYS[5], 0, 100)
  local count = #fast_ready
  -- The work index entry: the session id is the counter key's text between the prefix and
  -- ':count' (lua/lib/work.lua).
  local session = string.sub(COUNTER, string.find(COUNTER, ':', 1, true) + 1, -7)
  if count == 0 then
    redis.call('ZREM', WORK, session)
    return { 'settled' }
  end
  -- meta.lua's mkey: the split (unset = the counter) and the clear boundary in one MGET.
  fast_bounds = redis.call('MGET', SPLIT, COUNTER, string.sub(COUNTER, 1, -6) .. 'clear')
  local split = tonumber(fast_bounds[1] or fast_bounds[2] or '0')
  -- One ready event (a worker's usual claim): the commands the code below issues for a count
  -- of 1, with the same arguments, without its tables and loops.
  if count == 1 then
    local field = fast_ready[1]
    local key = META
    if tonumber(field) > split then
      key = META .. ':' .. decimal(math.floor((tonumber(field) - 1) / @A2_META_CHUNK_SIZE@))
    end
    local values = redis.call('HMGET', key, field .. ':ce', field .. ':d', field .. ':fc',
      field .. ':a', field .. ':e', field .. ':lf', field .. ':lfa', field .. ':av')
    local now = ARGV[2]
    local now_ms = tonumber(now)
    local expires = tonumber(values[1] or '0')
    local retry_at = nil
    if expires > now_ms then
      retry_at = expires
    elseif tonumber(values[8] or '0') > now_ms then
      retry_at = tonumber(values[8])
    end
    if retry_at then
      redis.call('ZADD', WORK, decimal(retry_at), session)
      return { 'busy', decimal(retry_at) }
    end
    -- entries.lua's read for one index.
    local entries = redis.call('XRANGE', KEYS[1], field .. '-0', field .. '-0')
    if #entries ~= 1 then return { 'missing', field } end
    local holder, expires_at = ARGV[1], ARGV[3]
    local attempt, first_claimed, row = claimed_row(values, 0, now)
    redis.call('HSET', key, field .. ':d', attempt, field .. ':fc', first_claimed,
      field .. ':lc', now, field .. ':ch', holder, field .. ':ce', expires_at)
    if limit == 1 then
      redis.call('ZADD', WORK, 'LT', now, session)
    else
      redis.call('ZADD', WORK, expires_at, session)
    end
    local result = { 'claimed', '1', now, holder, expires_at,
      decimal(tonumber(fast_bounds[3] or '0')) }
    result[put_entry(result, 6, entries[1]) + 1] = row
    return result
  end
  local key = nil
  if count <= 100 then
    for i = 1, count do
      local idx = tonumber(fast_ready[i])
      local hash = META
      if idx > split then hash = META .. ':' .. decimal(math.floor((idx - 1) / @A2_META_CHUNK_SIZE@)) end
      if key == nil then
        key = hash
      elseif hash ~= key then
        key = nil
        break
      end
    end
  end
  if key then
    local names = {}
    for i = 1, count do
      local field = fast_ready[i]
      local at = (i - 1) * 8
      names[at + 1] = field .. ':ce'
      names[at + 2] = field .. ':d'
      names[at + 3] = field .. ':fc'
      names[at + 4] = field .. ':a'
      names[at + 5] = field .. ':e'
      names[at + 6] = field .. ':lf'
      names[at + 7] = field .. ':lfa'
      names[at + 8] = field .. ':av'
    end
    local values = redis.call('HMGET', key, unpack(names))
    local now, holder, expires_at = ARGV[2], ARGV[1], ARGV[3]
    local now_ms = tonumber(now)
    -- The claimable events' positions in fast_ready, ascending.
    local picked, picked_fields, claimed, retry_at = {}, {}, 0, nil
    for i = 1, count do
      local at = (i - 1) * 8
      local expires = tonumber(values[at + 1] or '0')
      local available = tonumber(values[at + 8] or '0')
      if expires > now_ms then
        if not retry_at or expires < retry_at then retry_at = expires end
      elseif available > now_ms then
        if not retry_at or available < retry_at then retry_at = available end
      else
        claimed = claimed + 1
        picked[claimed] = i
        picked_fields[claimed] = fast_ready[i]
        if claimed == limit then break end
      end
    end
    local result, writes, r = { 'claimed', '', now, holder, expires_at, '' }, {}, 6
    if claimed > 0 then
      local entries, missing = read_entries(KEYS[1], picked_fields, claimed)
      if not entries then return { 'missing', missing } end
      for k = 1, claimed do
        local i = picked[k]
        local field = fast_ready[i]
        local attempt, first_claimed, row = claimed_row(values, (i - 1) * 8, now)
        local w = #writes
        writes[w + 1] = field .. ':d'
        writes[w + 2] = attempt
        writes[w + 3] = field .. ':fc'
        writes[w + 4] = first_claimed
        writes[w + 5] = field .. ':lc'
        writes[w + 6] = now
        writes[w + 7] = field .. ':ch'
        writes[w + 8] = holder
        writes[w + 9] = field .. ':ce'
        writes[w + 10] = expires_at
        r = put_entry(result, r, entries[k]) + 1
        result[r] = row
      end
    end
    if claimed > 0 then
      redis.call('HSET', key, unpack(writes))
      if claimed == limit then
        redis.call('ZADD', WORK, 'LT', now, session)
      elseif retry_at and retry_at < tonumber(expires_at) then
        redis.call('ZADD', WORK, decimal(retry_at), session)
      else
        redis.call('ZADD', WORK, expires_at, session)
      end
      result[2] = decimal(claimed)
      result[6] = decimal(tonumber(fast_bounds[3] or '0'))
      return result
    end
    if retry_at then
      redis.call('ZADD', WORK, decimal(retry_at), session)
      return { 'busy', decimal(retry_at) }
    end
    redis.call('ZREM', WORK, session)
    return { 'settled' }
  end
  if count > 100 then fast_ready = nil end  -- Only part of the set was read.
end
--#include meta.lua
--#include claim.lua
if fast_bounds then use_split(fast_bounds[1], fast_bounds[2], fast_bounds[3]) end
local excluded = {}
for i = 1, tonumber(ARGV[5]) do excluded[ARGV[5 + i]] = true end
return claim(KEYS[1], KEYS[5], ARGV[1], ARGV[2], ARGV[3], limit, excluded, fast_ready,
  ARGV[5] == '0')
