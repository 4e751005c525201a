-- SPDX-License-Identifier: MIT
-- @keys count meta meta-split work
-- @argv holder now available_at n {index attempt}*n
-- Ends the listed live leases of `holder` without counting a failure
-- (docs/semantics.md#release_claims, an a2 extension): deletes `ch` and `ce`; `d`, the claim times
-- and the failure fields stay, so the next claim is the next attempt. With availableAt (a snooze)
-- each released event also gets `av` = availableAt (docs/semantics.md#delayed-work), as a
-- delayed retry does; with '' an `av` already stored stays.
-- KEYS[1] count  KEYS[2] meta  KEYS[3] meta-split  KEYS[4] work (p:work, the work index:
-- docs/redis-layout.md#work-index)
-- ARGV[1] holder  ARGV[2] now ms  ARGV[3] availableAt ms|'' (the caller passes it only when
-- after now)  ARGV[4] n, then per claim: ARGV[4 + 2i - 1] index, ARGV[4 + 2i] attempt
-- Returns { releasedCount, releasedIndex..., notHeldIndex... }: every listed index exactly once
-- (a listed index that one of its entries releases is released), each list ascending.
-- A claim is released iff boundary < index <= head, the event is neither processed nor
-- dead-lettered, attemptCount EQUALS the attempt, the holder matches and the lease is live
-- (ce > now). Commands: one MGET, one HMGET per metadata hash read, one HDEL per hash written
-- and, with availableAt, one HSET per hash written; when it released anything, ZADD LT of the
-- session's work index entry to availableAt or now and the work signal {"f":<head>} (PUBLISH).
local COUNTER, META, SPLIT, WORK = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
--#include meta.lua
--#include work.lua
local counts = redis.call('MGET', COUNTER, SPLIT, CLEAR)
local total = tonumber(counts[1] or '0')
use_split(counts[2], counts[1], counts[3])
local now = tonumber(ARGV[2])
local available_at = ARGV[3]
local n = tonumber(ARGV[4])
local order, seen, fields = {}, {}, {}
for i = 1, n do
  local field = ARGV[4 + (i - 1) * 2 + 1]
  if not seen[field] then
    seen[field] = true
    order[#order + 1] = field
    local idx = tonumber(field)
    if idx > boundary and idx <= total then fields[#fields + 1] = field end
  end
end
table.sort(order, function(a, b) return tonumber(a) < tonumber(b) end)
local rows = read_fields(fields, { 'd', 'ce', 'p', 'f', 'ch' })
local released = {}
for i = 1, n do
  local field = ARGV[4 + (i - 1) * 2 + 1]
  local row = rows[field]
  if row and not released[field] and tonumber(row[1] or '0') == tonumber(ARGV[4 + i * 2]) and
     not row[3] and not row[4] and row[5] == ARGV[1] and tonumber(row[2] or '0') > now then
    released[field] = true
  end
end
-- One HDEL (and with availableAt one HSET) per hash, in the order the hashes are first met.
local deletes, hashes = {}, {}
local result, not_held = { '0' }, {}
for _, field in ipairs(order) do
  if released[field] then
    local key = mkey(field)
    if not deletes[key] then
      deletes[key] = {}
      hashes[#hashes + 1] = key
    end
    local names = deletes[key]
    names[#names + 1] = field .. ':ch'
    names[#names + 1] = field .. ':ce'
    if available_at ~= '' then put(key, field .. ':av', available_at) end
    result[#result + 1] = field
  else
    not_held[#not_held + 1] = field
  end
end
flush()
for _, key in ipairs(hashes) do sliced('HDEL', key, deletes[key]) end
if #hashes > 0 then
  work_lower(available_at ~= '' and available_at or ARGV[2])
  work_signal(decimal(total))
end
result[1] = decimal(#result - 1)
for _, field in ipairs(not_held) do result[#result + 1] = field end
return result
