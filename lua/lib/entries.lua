-- SPDX-License-Identifier: MIT
-- ENTRIES_LUA: the stream entries of the events a claim takes (claim_available.lua's fast path
-- and lua/lib/claim.lua). Entry ids are `<I>-0` (docs/redis-layout.md), so a run of indexes
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
