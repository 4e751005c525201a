-- SPDX-License-Identifier: MIT
-- Appends a batch of events to a session (CONTRACT.md 3.1), or recognises a replay of one.
-- KEYS[1] log (p:S:log)  KEYS[2] count  KEYS[3] meta  KEYS[4] pending  KEYS[5] ready
-- KEYS[6] meta-split  KEYS[6 + i] id key of event i (p:ids:<escaped id>), i = 1..n
-- ARGV[1] session id  ARGV[2] now ms  ARGV[3] n, then 6 per event: id, type, payloadJson,
-- causeJson|'', lane|'', settled '1'|'0'; then ARGV[4 + 6n] notify channel,
-- ARGV[5 + 6n] originIndex|''
-- Returns { 'empty', hasPending } | { 'ok', firstIndex, hasPending } |
--   { 'dup', hasPending, index... } | { 'partial', ownedCount } | { 'foreign', id } |
--   { 'no_parent', causeIndex } | { 'superseded', causeIndex } | { 'cleared', originIndex }
-- Verdict order: empty, foreign/dup/partial, cleared (origin), then each cause in batch order
-- (boundary, range, attempt/dead letter). hasPending is '1' or '0'.
local COUNTER, META, SPLIT, PENDING, READY = KEYS[2], KEYS[3], KEYS[6], KEYS[4], KEYS[5]
--#include meta.lua
--#include enqueue.lua
--#include id_owners.lua
--#include wake.lua
local function has_pending()
  return redis.call('ZCARD', PENDING) > 0 and '1' or '0'
end
local n = tonumber(ARGV[3])
if n == 0 then return { 'empty', has_pending() } end
local owners, count = read_owners(6, n, ARGV[1])
local base = tonumber(count or '0')
local dups = {}
for i = 1, n do
  if owners[i] then
    local rec = cjson.decode(owners[i])
    if rec[1] ~= ARGV[1] then return { 'foreign', ARGV[3 + (i - 1) * 6 + 1] } end
    dups[#dups + 1] = tostring(rec[2])
  end
end
if #dups == n then
  local res = { 'dup', has_pending() }
  for i = 1, #dups do res[#res + 1] = dups[i] end
  return res
end
if #dups > 0 then return { 'partial', tostring(#dups) } end
local origin = ARGV[5 + n * 6]
if origin and origin ~= '' and tonumber(origin) <= boundary then
  return { 'cleared', origin }
end
local causes, parents = {}, {}
for i = 1, n do
  local cause = ARGV[3 + (i - 1) * 6 + 4]
  if cause ~= '' then
    local parsed = cjson.decode(cause)
    local pidx = tonumber(parsed.index)
    causes[#causes + 1] = parsed
    if pidx >= 1 and pidx <= base then parents[#parents + 1] = tostring(pidx) end
  end
end
local parent_rows = read_fields(parents, { 'd', 'f', 'p' })
local parent_pending = false
for _, parsed in ipairs(causes) do
  local pidx = tonumber(parsed.index)
  if pidx <= boundary then return { 'superseded', tostring(pidx) } end
  if pidx < 1 or pidx > base then
    return { 'no_parent', tostring(parsed.index) }
  end
  local row = parent_rows[tostring(pidx)]
  if tonumber(row[1] or '0') ~= tonumber(parsed.attempt) or row[2] then
    return { 'superseded', tostring(pidx) }
  end
  -- A claimed, unprocessed parent is still in the pending set.
  if not row[3] then parent_pending = true end
end
local owner_writes = {}
for i = 1, n do
  local o = 3 + (i - 1) * 6
  local field = tostring(base + i)
  redis.call('XADD', KEYS[1], field .. '-0',
    'id', ARGV[o + 1], 'type', ARGV[o + 2], 'payload', ARGV[o + 3],
    'created_at', ARGV[2], 'cause', ARGV[o + 4], 'lane', ARGV[o + 5])
  owner_writes[#owner_writes + 1] = KEYS[6 + i]
  owner_writes[#owner_writes + 1] = cjson.encode({ ARGV[1], base + i })
  wake_add(field, ARGV[o + 1], ARGV[o + 2], ARGV[o + 3])
  if ARGV[o + 6] == '1' then
    put(mkey(field), field .. ':p', ARGV[2])
  else
    enqueue(field, ARGV[o + 5])
  end
end
owner_writes[#owner_writes + 1] = COUNTER
owner_writes[#owner_writes + 1] = tostring(base + n)
split_write(owner_writes)
sliced('MSET', nil, owner_writes)
flush_queue()
flush()
local pending_after = (#queued > 0 or parent_pending) and '1' or has_pending()
wake(ARGV[4 + n * 6], tostring(base + n), ARGV[2])
return { 'ok', tostring(base + 1), pending_after }
