-- SPDX-License-Identifier: MIT
-- CLAIM_LUA: the claim of claim_available (docs/semantics.md#claim_available), shared by
-- claim_available.lua (its general path) and the completion scripts' claim_next
-- (docs/semantics.md#claim_next). The including script binds COUNTER, META and SPLIT and
-- includes META_LUA; it binds WORK too (p:work, WORK_LUA).
-- claim(log, ready, holder, now, expires_at, limit, excluded, fast_ready): `ready` is the key of
-- the ready set (read with ZRANGE unless `fast_ready` holds that reply already: the whole set,
-- or with a limit in chunks of max(8, 2 * limit) ranks, doubling, until the limit is reached),
-- `now` and `expires_at` are the decimal texts of the arguments, `limit` the maximum number of
-- claims (nil: no limit), `excluded` a set of index texts to ignore. Returns the reply of claim_available.lua:
-- { 'claimed', count, now, holder, expiresAt, boundary, (entry, row) x count } |
-- { 'busy', retryAt } | { 'settled' } | { 'missing', index }. 'missing' returns before any write.
-- The values every claimed event shares (its last claim now, the holder, the lease end, the
-- clear boundary) come once; per event its stream entry (entries.lua put_entry: the entry's id
-- and six values, or the entry whole) and its row: false when none of its claim columns is set
-- (attempt 1, no failures, first claimed now: a fresh event), else { attempt, failureCount,
-- lastError|false, firstClaimedAt, lastFailedAt|false, lastFailedAttempt|false,
-- availableAt|false }. The server converts every element of a reply (about 70 ns each), so a
-- fresh event costs 8 elements where the whole entry and 11 columns cost 26
-- (docs/redis-layout.md#claim_availablelua).
-- Its cost per claimed event is a few table stores: the metadata of a run of candidates in one
-- hash is one read (none when the hash is empty), the entries of consecutive picked indexes one
-- XRANGE (lua/lib/entries.lua), the writes one HSET per 100 events, the reply built once.
-- A held candidate (live lease) adds its lease end to retryAt, a delayed one its `av`; the
-- candidates after the limit-th claim are not looked at. A caller that buffered writes of its
-- own flushes them first (a script never reads a field it has buffered).
-- With `indexed` (a claim without exclusions) it sets the session's work index entry
-- (docs/semantics.md#work-discovery) with one command after its writes: 'settled' removes it,
-- 'busy' sets retryAt, a claim that stopped at `limit` lowers it to now (the rest is unseen),
-- any other claim sets the earliest of the new lease end and the busy time of the ready events
-- it did not claim (retryAt so far).
--#include meta.lua
--#include work.lua
--#include entries.lua
-- The claim columns, read for every candidate: their positions in a row.
local CLAIM_COLUMNS = { 'ce', 'd', 'fc', 'a', 'e', 'lf', 'lfa', 'av' }
local CLAIM_COLUMN_AT = { ce = 1, d = 2, fc = 3, a = 4, e = 5, lf = 6, lfa = 7, av = 8 }
-- A run of at least this many candidates in one hash first asks its size (HLEN): an empty hash
-- (events never claimed) is not read at all, and a hash of at most 8 fields per candidate is
-- read whole (HGETALL) instead of by 8 names per candidate. A shorter run is one HMGET.
local CLAIM_PROBE_RUN = 16
-- Reads the claim columns of candidates first..last (ascending, all in hash `key`) into
-- rows[k] (absent: no field of k is set). Returns false when the hash is empty (no rows).
local function read_claim_rows(key, fields, first, last, rows)
  local n = last - first + 1
  if n >= CLAIM_PROBE_RUN then
    local size = redis.call('HLEN', key)
    if size == 0 then return false end
    if size <= 8 * n then
      local wanted = {}
      for k = first, last do wanted[fields[k]] = k end
      local all = redis.call('HGETALL', key)
      for at = 1, #all, 2 do
        local name = all[at]
        local colon = string.find(name, ':', 1, true)
        if colon then
          local k = wanted[string.sub(name, 1, colon - 1)]
          if k then
            local column = CLAIM_COLUMN_AT[string.sub(name, colon + 1)]
            if column then
              local row = rows[k]
              if not row then
                row = {}
                rows[k] = row
              end
              row[column] = all[at + 1]
            end
          end
        end
      end
      return true
    end
  end
  local names = {}
  for k = first, last do
    local field, at = fields[k], (k - first) * 8
    for column = 1, 8 do names[at + column] = field .. ':' .. CLAIM_COLUMNS[column] end
  end
  local values = sliced('HMGET', key, names)
  for k = first, last do
    local at = (k - first) * 8
    local row = nil
    for column = 1, 8 do
      local value = values[at + column]
      if value then
        if not row then
          row = {}
          rows[k] = row
        end
        row[column] = value
      end
    end
  end
  return true
end
-- The last position k in first..n of `fields` (ascending index texts) with index <= bound.
local function last_at_most(fields, first, n, bound)
  if tonumber(fields[n]) <= bound then return n end
  local lo, hi = first, n - 1  -- fields[first] <= bound < fields[n]
  while lo < hi do
    local mid = math.floor((lo + hi + 1) / 2)
    if tonumber(fields[mid]) <= bound then lo = mid else hi = mid - 1 end
  end
  return lo
end
local function claim(log, ready_key, holder, now_text, expires_at, limit, excluded, fast_ready,
                     indexed)
  local retry_at = nil
  local now = tonumber(now_text)
  local any_excluded = next(excluded) ~= nil
  -- The events to claim, ascending: their index texts, their claim columns (absent: none set),
  -- and the metadata hashes they live in: group g holds picked[starts[g]..starts[g + 1] - 1],
  -- all in hash keys[g].
  local picked, picked_rows, starts, keys = {}, {}, {}, {}
  local count = 0
  -- A bounded claim reads the ready set in chunks, the first of twice its limit (at least 8),
  -- each next one twice as long, so claiming a few events of a long ready set costs what it
  -- reads (the held and delayed events before them, then its limit), not the whole set.
  local chunk = -1
  if limit and not fast_ready then chunk = math.max(8, limit * 2) end
  local start = 0
  local full = false
  while true do
    local ready
    if fast_ready then
      ready = fast_ready
    elseif chunk < 0 then
      ready = redis.call('ZRANGE', ready_key, 0, -1)
    else
      ready = redis.call('ZRANGE', ready_key, start, start + chunk - 1)
    end
    local fields = ready
    if any_excluded then
      fields = {}
      for _, field in ipairs(ready) do
        if not excluded[field] then fields[#fields + 1] = field end
      end
    end
    local n = #fields
    -- Runs of candidates in one metadata hash (the ready set is ascending): one read each.
    local first = 1
    while first <= n and not full do
      local hash = mchunk(tonumber(fields[first]))
      local last = n
      if hash < 0 then
        last = last_at_most(fields, first, n, split)
      else
        last = last_at_most(fields, first, n, (hash + 1) * @A2_META_CHUNK_SIZE@)
      end
      local key = mchunk_key(hash)
      local rows = {}
      local any = read_claim_rows(key, fields, first, last, rows)
      starts[#starts + 1] = count + 1
      keys[#keys + 1] = key
      if not any then
        -- An empty hash: every candidate of the run is claimable.
        if limit and count + last - first + 1 >= limit then
          last = first + limit - count - 1
          full = true
        end
        for k = first, last do
          count = count + 1
          picked[count] = fields[k]
        end
      else
        for k = first, last do
          local row = rows[k]
          local take = true
          if row then
            local expires = tonumber(row[1] or '0')
            local available = tonumber(row[8] or '0')
            if expires > now then
              if not retry_at or expires < retry_at then retry_at = expires end
              take = false
            elseif available > now then
              if not retry_at or available < retry_at then retry_at = available end
              take = false
            end
          end
          if take then
            count = count + 1
            picked[count] = fields[k]
            picked_rows[count] = row
            if count == limit then
              full = true
              break
            end
          end
        end
      end
      first = last + 1
    end
    if full or chunk < 0 or #ready < chunk then break end
    start = start + chunk
    chunk = chunk * 2
  end
  if count > 0 then
    local entries, missing = read_entries(log, picked, count)
    if not entries then return { 'missing', missing } end
    flush()
    local result = { 'claimed', decimal(count), now_text, holder, expires_at, decimal(boundary) }
    local r = 6
    starts[#starts + 1] = count + 1
    local writes = {}
    for g = 1, #keys do
      local w = 0
      for k = starts[g], starts[g + 1] - 1 do
        local field, attempt, first_claimed, row = picked[k], '1', now_text, false
        if picked_rows[k] then
          attempt, first_claimed, row = claimed_row(picked_rows[k], 0, now_text)
        end
        r = put_entry(result, r, entries[k]) + 1
        result[r] = row
        if w == @A2_LUA_ARGUMENT_SLICE@ then
          redis.call('HSET', keys[g], unpack(writes, 1, w))
          w = 0
        end
        writes[w + 1] = field .. ':d'
        writes[w + 2] = attempt
        writes[w + 3] = field .. ':fc'
        writes[w + 4] = first_claimed
        writes[w + 5] = field .. ':lc'
        writes[w + 6] = now_text
        writes[w + 7] = field .. ':ch'
        writes[w + 8] = holder
        writes[w + 9] = field .. ':ce'
        writes[w + 10] = expires_at
        w = w + 10
      end
      if w > 0 then redis.call('HSET', keys[g], unpack(writes, 1, w)) end
    end
    if indexed then
      if count == limit then
        work_lower(now_text)
      elseif retry_at and retry_at < tonumber(expires_at) then
        work_set(decimal(retry_at))
      else
        work_set(expires_at)
      end
    end
    return result
  end
  flush()
  if retry_at then
    if indexed then work_set(decimal(retry_at)) end
    return { 'busy', decimal(retry_at) }
  end
  if indexed then work_remove() end
  return { 'settled' }
end
-- claim_next of the completion scripts (docs/semantics.md#claim_next): ARGV[at] holder ('' or
-- absent: none), ARGV[at + 1] expiresAt, ARGV[at + 2] maxEvents. Returns claim's reply, or nil
-- without a holder. Runs after the completions flushed their writes.
local function claim_next(at, ready_key, now_text)
  local holder = ARGV[at] or ''
  if holder == '' then return nil end
  return claim(KEYS[1], ready_key, holder, now_text, ARGV[at + 1], tonumber(ARGV[at + 2]), {}, nil,
    true)
end
