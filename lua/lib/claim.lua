-- SPDX-License-Identifier: MIT
-- CLAIM_LUA: the claim of claim_available (docs/semantics.md#claim_available), shared by
-- claim_available.lua (its general path) and the completion scripts' claim_next
-- (docs/semantics.md#claim_next). The including script binds COUNTER, META and SPLIT and
-- includes META_LUA; it binds WORK too (p:work, WORK_LUA).
-- claim(log, ready, holder, now, expires_at, limit, excluded, fast_ready): `ready` is the key of
-- the ready set (read with ZRANGE unless `fast_ready` holds that reply already: the whole set,
-- or with a limit in chunks of max(8, 2 * limit) ranks, doubling, until the limit is reached),
-- `now` and
-- `expires_at` are the decimal texts of the arguments, `limit` the maximum number of claims (nil:
-- no limit), `excluded` a set of index texts to ignore. Returns the reply of claim_available.lua:
-- { 'claimed', count, (11 columns) x count, boundary } | { 'busy', retryAt } | { 'settled' } |
-- { 'missing', index }. 'missing' returns before the buffered claim writes are flushed.
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
local function claim(log, ready_key, holder, now_text, expires_at, limit, excluded, fast_ready,
                     indexed)
  local claimed = {}
  local retry_at = nil
  local now = tonumber(now_text)
  -- A bounded claim reads the ready set in chunks, the first of twice its limit (at least 8),
  -- each next one twice as long, so claiming a few events of a long ready set costs what it
  -- reads (the held and delayed events before them, then its limit), not the whole set.
  local chunk = -1
  if limit and not fast_ready then chunk = math.max(8, limit * 2) end
  local start = 0
  while true do
    local ready
    if fast_ready then
      ready = fast_ready
    elseif chunk < 0 then
      ready = redis.call('ZRANGE', ready_key, 0, -1)
    else
      ready = redis.call('ZRANGE', ready_key, start, start + chunk - 1)
    end
    local candidates = {}
    for _, field in ipairs(ready) do
      if not excluded[field] then candidates[#candidates + 1] = field end
    end
    local rows = read_fields(candidates, { 'ce', 'd', 'fc', 'a', 'e', 'lf', 'lfa', 'av' })
    local full = false
    for _, field in ipairs(candidates) do
      local row = rows[field]
      local expires = tonumber(row[1] or '0')
      local available = tonumber(row[8] or '0')
      if expires > now then
        if not retry_at or expires < retry_at then retry_at = expires end
      elseif available > now then
        if not retry_at or available < retry_at then retry_at = available end
      else
        local entries = redis.call('XRANGE', log, field .. '-0', field .. '-0')
        if #entries == 0 then return { 'missing', field } end
        local attempt = decimal(tonumber(row[2] or '0') + 1)
        local first_claimed = row[3] or now_text
        local meta_key = mkey(field)
        put(meta_key, field .. ':d', attempt)
        put(meta_key, field .. ':fc', first_claimed)
        put(meta_key, field .. ':lc', now_text)
        put(meta_key, field .. ':ch', holder)
        put(meta_key, field .. ':ce', expires_at)
        claimed[#claimed + 1] = {
          attempt,
          row[4] or '0',
          row[5] or false,
          first_claimed,
          now_text,
          row[6] or false,
          row[7] or false,
          holder,
          expires_at,
          entries[1],
          row[8] or false
        }
        if #claimed == limit then
          full = true
          break
        end
      end
    end
    if full or chunk < 0 or #ready < chunk then break end
    start = start + chunk
    chunk = chunk * 2
  end
  flush()
  if #claimed > 0 then
    if indexed then
      if #claimed == limit then
        work_lower(now_text)
      elseif retry_at and retry_at < tonumber(expires_at) then
        work_set(decimal(retry_at))
      else
        work_set(expires_at)
      end
    end
    local result = { 'claimed', decimal(#claimed) }
    for _, one in ipairs(claimed) do
      for _, value in ipairs(one) do result[#result + 1] = value end
    end
    result[#result + 1] = decimal(boundary)
    return result
  end
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
