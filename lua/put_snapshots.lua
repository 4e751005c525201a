-- SPDX-License-Identifier: MIT
-- @keys snap snap-history count meta snapshot-pin-counts meta-split
-- @argv now pin_prefix n {index checkpoint pins {pin}*pins}*n reducer
-- Writes reducer checkpoints for one (session, reducer) and pins them to unfinished events
-- (docs/semantics.md#put_snapshots steps 3-10). Writes from before the latest clear are dropped,
-- and a head from before it is replaced as if absent (this reducer's history below the boundary is
-- deleted then).
-- KEYS[1] snap:<reducer> (head)  KEYS[2] snap-history:<reducer>  KEYS[3] count  KEYS[4] meta
-- KEYS[5] snapshot-pin-counts  KEYS[6] meta-split
-- ARGV[1] now ms  ARGV[2] pin key prefix (p:S:snapshot-pins:)  ARGV[3] write count, then per
-- write (ascending, one per index): index, checkpointJson ({"index","state","updatedAt","r":1}),
-- pinCount, pinEventIndex x pinCount; finally ARGV[#ARGV] the reducer name
-- Returns 1
-- A pin ref is cjson.encode({ historyKey, decimal(index) }) (json.lua); a pin is added by SADD to the
-- event's pin set and, only when that added a member, HINCRBY of the ref's count. Only events
-- with boundary < index <= head that are neither processed nor dead-lettered are pinned.
local COUNTER, META, SPLIT = KEYS[3], KEYS[4], KEYS[6]
--#include meta.lua
local counts = redis.call('MGET', COUNTER, SPLIT, CLEAR)
local total = tonumber(counts[1] or '0')
use_split(counts[2], counts[1], counts[3])
local pinned = {}
local offset = 4
for i = 1, tonumber(ARGV[3]) do
  local pin_count = tonumber(ARGV[offset + 2])
  for p = 1, pin_count do
    local event_index = tonumber(ARGV[offset + 2 + p])
    if event_index > boundary and event_index <= total then
      pinned[#pinned + 1] = decimal(event_index)
    end
  end
  offset = offset + 3 + pin_count
end
local status = read_fields(pinned, { 'p', 'f' })
local snapshots = {}
offset = 4
for i = 1, tonumber(ARGV[3]) do
  local index = tonumber(ARGV[offset])
  local snapshot = ARGV[offset + 1]
  local pin_count = tonumber(ARGV[offset + 2])
  local ref = cjson.encode({ KEYS[2], decimal(index) })
  for p = 1, pin_count do
    local event_index = tonumber(ARGV[offset + 2 + p])
    if index >= boundary and event_index > boundary and event_index <= total then
      local row = status[decimal(event_index)]
      if not row[1] and not row[2] then
        local pin_key = ARGV[2] .. decimal(event_index)
        if redis.call('SADD', pin_key, ref) == 1 then
          redis.call('HINCRBY', KEYS[5], ref, 1)
        end
      end
    end
  end
  if index >= boundary then
    snapshots[#snapshots + 1] = { index = index, snapshot = snapshot, ref = ref }
  end
  offset = offset + 3 + pin_count
end
if #snapshots == 0 then return 1 end

local head = redis.call('GET', KEYS[1])
local head_index = nil
local registered = false
if head then
  local record = cjson.decode(head)
  head_index = tonumber(record['index'])
  registered = record['r'] == 1
end
if head_index and head_index < boundary then
  head, head_index, registered = nil, nil, false
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. decimal(boundary))
end
-- Deletion finds each reducer's keys through this set instead of a scan.
-- Heads written since carry the mark, so a reducer registers once.
if not registered then
  redis.call('SADD', string.sub(COUNTER, 1, -6) .. 'snap-reducers', ARGV[#ARGV])
end
local latest = snapshots[#snapshots]
local writes_head = not head_index or latest.index >= head_index
local advances = not head_index or latest.index > head_index
local final_head_index = advances and latest.index or head_index
-- An advancing write moves a pinned old head into history (at most one member per score).
if advances and head and
   tonumber(redis.call('HGET', KEYS[5], cjson.encode({ KEYS[2], decimal(head_index) })) or '0') > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], head_index, head_index)
  redis.call('ZADD', KEYS[2], head_index, head)
end

-- The rest is hidden in seed-R; decision docs/semantics.md#Q23 (put_snapshots steps 9-10): a
-- non-head write replaces any history checkpoint at its index and is kept only while pinned; the
-- head becomes the latest write when it is at or above the current head (updatedAt is in the
-- write's JSON).
for _, write in ipairs(snapshots) do
  if write.index < final_head_index then
    redis.call('ZREMRANGEBYSCORE', KEYS[2], write.index, write.index)
    if tonumber(redis.call('HGET', KEYS[5], write.ref) or '0') > 0 then
      redis.call('ZADD', KEYS[2], write.index, write.snapshot)
    end
  end
end
if writes_head then redis.call('SET', KEYS[1], latest.snapshot) end
return 1
