-- SPDX-License-Identifier: MIT
-- @keys work
-- @argv due_by after_at after_session limit
-- One page of the work index (docs/semantics.md#find_work, an a2 extension), read-only:
-- the entries after the cursor (exclusive) in ascending (score, member) order, members of one
-- score bytewise (Redis's order), with score <= dueBy.
-- KEYS[1] work (p:work, docs/redis-layout.md#work-index)
-- ARGV[1] dueBy ms|'' (none)  ARGV[2] cursor at ms|'' (from the first)  ARGV[3] cursor session
-- ARGV[4] limit (1..1000)
-- Returns { member, score, ... }, at most limit pairs.
-- Commands: without a cursor one ZRANGE BYSCORE LIMIT. With one: ZSCORE, and when the cursor
-- is an entry with that score ZRANK, else ZCOUNT twice and a binary search over the entries of
-- the cursor's score (one ZRANGE by rank per step); then one ZRANGE by rank. O(log N + limit)
-- for N entries (log^2 N in the worst case of many ties): idle sessions have no entry.
local WORK = KEYS[1]
local due = ARGV[1]
local limit = tonumber(ARGV[4])
local max = '+inf'
if due ~= '' then max = due end
if ARGV[2] == '' then
  return redis.call('ZRANGE', WORK, '-inf', max, 'BYSCORE', 'LIMIT', 0, limit, 'WITHSCORES')
end
local at, after = tonumber(ARGV[2]), ARGV[3]
-- a <= b, bytewise (Lua's string comparison follows the server's collation locale).
local function not_after(a, b)
  local common = math.min(#a, #b)
  for i = 1, common do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a <= #b
end
local start
local score = redis.call('ZSCORE', WORK, after)
if score and tonumber(score) == at then
  start = redis.call('ZRANK', WORK, after) + 1
else
  -- The first rank past the cursor among the entries of score `at` (sorted bytewise).
  local low = redis.call('ZCOUNT', WORK, '-inf', '(' .. ARGV[2])
  local high = low + redis.call('ZCOUNT', WORK, ARGV[2], ARGV[2])
  while low < high do
    local middle = math.floor((low + high) / 2)
    local member = redis.call('ZRANGE', WORK, middle, middle)[1]
    if not_after(member, after) then low = middle + 1 else high = middle end
  end
  start = low
end
local page = redis.call('ZRANGE', WORK, start, start + limit - 1, 'WITHSCORES')
if due == '' then return page end
local dueBy, result = tonumber(due), {}
for i = 1, #page, 2 do
  if tonumber(page[i + 1]) > dueBy then break end
  result[i] = page[i]
  result[i + 1] = page[i + 1]
end
return result
