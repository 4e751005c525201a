-- SPDX-License-Identifier: MIT
-- APPEND_GENERAL_LUA: the general path of an append (docs/semantics.md#append), after a script's
-- fast path declined: replays, owned ids, causes, lanes, settled or scheduled events, origins,
-- empty and large batches. The including script (append.lua, append_one.lua) has set, in
-- append.lua's KEYS and ARGV layout: COUNTER, META, SPLIT, PENDING, READY, WORK, n, ARGV (its
-- own, or a local in that layout), and fast_values (counter, split, clear boundary and the id
-- keys, as read_owners in id_owners.lua reads them: the fast path's MGET of the others with the
-- boundary put in third place; nil when it read nothing), and included json.lua.
--#include meta.lua
--#include enqueue.lua
--#include id_owners.lua
--#include wake.lua
--#include work.lua
--#include entries.lua
local function has_pending()
  return redis.call('ZCARD', PENDING) > 0 and '1' or '0'
end
if n == 0 then return { 'empty', has_pending() } end
local owners, count
if fast_values then
  owners, count = owners_of(fast_values, n, ARGV[1])
else
  owners, count = read_owners(6, n, ARGV[1])
end
local base = tonumber(count or '0')
-- Tables are made only when needed: the common batch has fresh ids and no causes.
local dups = nil
for i = 1, n do
  if owners[i] then
    local rec = cjson.decode(owners[i])
    if rec[1] ~= ARGV[1] then return { 'foreign', ARGV[3 + (i - 1) * 7 + 1] } end
    dups = dups or {}
    dups[#dups + 1] = decimal(rec[2])
  end
end
if dups then
  if #dups == n then
    -- A replay: its rows as stored now, pairs (streamEntry, ROW_FIELDS columns) in batch order,
    -- so the caller reads nothing after the script (S136). A valid replay's indexes ascend by
    -- one: one XRANGE (read_entries); any other order, a mismatch the caller reports, or a
    -- missing entry (false, which the caller cannot read) is read index by index.
    local ascending = true
    for i = 2, n do
      if tonumber(dups[i]) <= tonumber(dups[i - 1]) then ascending = false end
    end
    local entries = ascending and read_entries(KEYS[1], dups, n) or nil
    local columns = read_fields(dups, ROW_FIELDS)
    local res = { 'rows', has_pending() }
    for i = 1, n do
      res[#res + 1] = (entries and entries[i]) or
        redis.call('XRANGE', KEYS[1], dups[i] .. '-0', dups[i] .. '-0')[1] or false
      res[#res + 1] = columns[dups[i]]
    end
    return res
  end
  return { 'partial', decimal(#dups) }
end
local origin = ARGV[5 + n * 7]
if origin and origin ~= '' and tonumber(origin) <= boundary then
  return { 'cleared', origin }
end
local causes, parents = nil, nil
for i = 1, n do
  local cause = ARGV[3 + (i - 1) * 7 + 4]
  if cause ~= '' then
    local parsed = cjson.decode(cause)
    local pidx = tonumber(parsed.index)
    if not causes then causes, parents = {}, {} end
    causes[#causes + 1] = parsed
    if pidx >= 1 and pidx <= base then parents[#parents + 1] = decimal(pidx) end
  end
end
local parent_pending = false
if causes then
  local parent_rows = read_fields(parents, { 'd', 'f', 'p' })
  for _, parsed in ipairs(causes) do
    local pidx = tonumber(parsed.index)
    if pidx <= boundary then return { 'superseded', decimal(pidx) } end
    if pidx < 1 or pidx > base then
      return { 'no_parent', decimal(parsed.index) }
    end
    local row = parent_rows[decimal(pidx)]
    if tonumber(row[1] or '0') ~= tonumber(parsed.attempt) or row[2] then
      return { 'superseded', decimal(pidx) }
    end
    -- A claimed, unprocessed parent is still in the pending set.
    if not row[3] then parent_pending = true end
  end
end
-- Owner records [session, index], the bytes cjson.encode({ ARGV[1], base + i }) makes.
local owner_writes, session_json = {}, json_string(ARGV[1])
-- The work index time: the earliest over the unsettled events of availableAt, else now (text).
local work_at, work_at_ms = nil, nil
for i = 1, n do
  local o = 3 + (i - 1) * 7
  local field = decimal(base + i)
  redis.call('XADD', KEYS[1], field .. '-0',
    'id', ARGV[o + 1], 'type', ARGV[o + 2], 'payload', ARGV[o + 3],
    'created_at', ARGV[2], 'cause', ARGV[o + 4], 'lane', ARGV[o + 5])
  owner_writes[#owner_writes + 1] = KEYS[6 + i]
  owner_writes[#owner_writes + 1] = '[' .. session_json .. ',' .. field .. ']'
  wake_add(field, ARGV[o + 1], ARGV[o + 2], ARGV[o + 3])
  if ARGV[o + 6] == '1' then
    put(mkey(field), field .. ':p', ARGV[2])
  else
    enqueue(field, ARGV[o + 5])
    local at = ARGV[2]
    if ARGV[o + 7] ~= '' then
      put(mkey(field), field .. ':av', ARGV[o + 7])
      at = ARGV[o + 7]
    end
    if not work_at_ms or tonumber(at) < work_at_ms then work_at, work_at_ms = at, tonumber(at) end
  end
end
owner_writes[#owner_writes + 1] = COUNTER
owner_writes[#owner_writes + 1] = decimal(base + n)
split_write(owner_writes)
sliced('MSET', nil, owner_writes)
flush_queue()
flush()
if work_at then work_lower(work_at) end
local pending_after = (#queued > 0 or parent_pending) and '1' or has_pending()
wake(ARGV[4 + n * 7], decimal(base + n), ARGV[2], work_at == nil)
return { 'ok', decimal(base + 1), pending_after }
