-- SPDX-License-Identifier: MIT
-- @keys snap snap-history count
-- @argv cap
-- Reads a reducer's checkpoint state for readState (docs/semantics.md#read_state) in one atomic
-- step: the head, the checkpoint to fold from, the log frontier and the clear boundary. Checkpoints
-- from before the boundary are ignored. The boundary key p:S:clear is derived from the count key.
-- KEYS[1] snap:<reducer> (head)  KEYS[2] snap-history:<reducer>  KEYS[3] count
-- ARGV[1] cap (snapshotThroughIndex ?? throughIndex) or ''
-- Returns { headIndex|'', checkpointJson|'', count, boundary }; a stored head whose index is not
-- a safe non-negative integer fails the script ("invalid snapshot head index").
--#include json.lua
local counts = redis.call('MGET', KEYS[3], string.sub(KEYS[3], 1, -6) .. 'clear')
local boundary = tonumber(counts[2] or '0')
local head = redis.call('GET', KEYS[1])
local head_index = head and cjson.decode(head)['index'] or nil
if head and (type(head_index) ~= 'number' or head_index < 0 or head_index > 9007199254740991 or head_index ~= math.floor(head_index)) then
  return redis.error_reply('invalid snapshot head index')
end
if head_index and head_index < boundary then
  head = nil
  head_index = nil
end
local cap = ARGV[1]
local snapshot = nil
if head_index and (cap == '' or head_index <= tonumber(cap)) then
  snapshot = head
else
  local upper = cap == '' and '+inf' or cap
  local historical = redis.call('ZREVRANGEBYSCORE', KEYS[2], upper, boundary, 'LIMIT', 0, 1)
  if #historical > 0 then snapshot = historical[1] end
end
return { head_index or '', snapshot or '', counts[1] or '0', decimal(boundary) }
