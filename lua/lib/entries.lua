-- SPDX-License-Identifier: MIT
-- ENTRIES_LUA: the stream entries of the events a claim takes and their parts of its reply
-- (claim_available.lua's fast path and lua/lib/claim.lua), and of an append's replay
-- (lua/lib/append_general.lua); the includer has json.lua. Entry ids are `<I>-0` (docs/redis-layout.md), so a run of indexes
-- reads with one XRANGE from its first to its last, and when the reply holds as many entries as
-- the run spans, the entry of index I is at position I - first + 1.
-- read_entries(log, fields, count): fields[1..count] the ascending index texts. Consecutive
-- indexes (the common claim) are one XRANGE whose reply is the result itself; otherwise indexes
-- at most ENTRY_GAP apart share one XRANGE (the entries between them are read and dropped) and
-- a wider gap starts the next one. Returns entries (entries[k] the entry of fields[k]), or nil
-- and the first index text without an entry.
local ENTRY_GAP = 8
-- The entries of fields[i..j] from `entries` (the XRANGE of fields[i]-0..fields[j]-0) into out,
-- by id; returns the first index text without an entry, or nil.
local function entries_by_id(entries, fields, i, j, out)
  local by_id = {}
  for _, entry in ipairs(entries) do by_id[entry[1]] = entry end
  for k = i, j do
    local entry = by_id[fields[k] .. '-0']
    if not entry then return fields[k] end
    out[k] = entry
  end
  return nil
end
local function read_entries(log, fields, count)
  if tonumber(fields[count]) - tonumber(fields[1]) + 1 == count then
    local entries = redis.call('XRANGE', log, fields[1] .. '-0', fields[count] .. '-0')
    if #entries == count then return entries end
    local out = {}
    local missing = entries_by_id(entries, fields, 1, count, out)
    return nil, missing
  end
  local numbers = {}
  for k = 1, count do numbers[k] = tonumber(fields[k]) end
  local out = {}
  local i = 1
  while i <= count do
    local first = numbers[i]
    local j, last = i, first
    while j < count and numbers[j + 1] - last <= ENTRY_GAP do
      j = j + 1
      last = numbers[j]
    end
    local entries = redis.call('XRANGE', log, fields[i] .. '-0', fields[j] .. '-0')
    if #entries == last - first + 1 then
      for k = i, j do out[k] = entries[numbers[k] - first + 1] end
    else
      local missing = entries_by_id(entries, fields, i, j, out)
      if missing then return nil, missing end
    end
    i = j + 1
  end
  return out
end
-- put_entry(result, r, entry): a claimed event's stream entry into a claim's reply
-- (lua/lib/claim.lua) at result[r + 1], returning the position of its last element. An entry
-- whose fields are the six a2 and the original package write, in their order (id, type,
-- payload, created_at, cause, lane: every XADD of either), goes as 7 values: its stream id, then
-- the six values; any other entry goes whole ([streamId, [field, value, ...]], one element). The
-- server converts every element of a reply into the protocol (about 70 ns each), so the values
-- alone cost it about half of the whole entry (15 elements): 9.1 against 12.5 ms for a reply of
-- 5,000 entries (docs/redis-layout.md#claim_availablelua).
local function put_entry(result, r, entry)
  local f = entry[2]
  if f[1] == 'id' and f[3] == 'type' and f[5] == 'payload' and f[7] == 'created_at' and
     f[9] == 'cause' and f[11] == 'lane' and #f == 12 then
    result[r + 1] = entry[1]
    result[r + 2] = f[2]
    result[r + 3] = f[4]
    result[r + 4] = f[6]
    result[r + 5] = f[8]
    result[r + 6] = f[10]
    result[r + 7] = f[12]
    return r + 7
  end
  result[r + 1] = entry
  return r + 1
end
-- claimed_row(columns, at, now): a claimed event's claim columns columns[at + 1 .. at + 8] (ce d
-- fc a e lf lfa av, in lua/lib/claim.lua's CLAIM_COLUMNS order; nil or false when unset) and the
-- claim's time -> its new attempt (text), its first claim time, and its row in the claim's reply:
-- false when no column is set (attempt '1', first claimed now: a fresh event), else { attempt,
-- failureCount, lastError|false, firstClaimedAt, lastFailedAt|false, lastFailedAttempt|false,
-- availableAt|false }.
local function claimed_row(columns, at, now)
  for c = at + 1, at + 8 do
    if columns[c] then
      local attempt = decimal(tonumber(columns[at + 2] or '0') + 1)
      local first_claimed = columns[at + 3] or now
      return attempt, first_claimed, { attempt, columns[at + 4] or '0', columns[at + 5] or false,
        first_claimed, columns[at + 6] or false, columns[at + 7] or false,
        columns[at + 8] or false }
    end
  end
  return '1', now, false
end
