-- SPDX-License-Identifier: MIT
-- @keys count
-- @argv page_size
-- Finds the next reclaim batch (docs/semantics.md#reclaim): a moved (cleared) log and up to a page
-- of its [index, id] pairs, without payloads. Empty moved logs met on the way are deleted and
-- removed from p:S:cleared; with none left it sweeps the old checkpoints and returns nothing, so a
-- retry finishes an interrupted deletion. The session prefix is derived from the count key.
-- KEYS[1] count
-- ARGV[1] batch size (kReclaimBatchSize, @A2_RECLAIM_BATCH_SIZE@)
-- Returns {} (never cleared, or nothing left: the sweep ran) |
--   { movedLogKey, index1, id1, index2, id2, ... }
--#include sweep_checkpoints.lua
local session = string.sub(KEYS[1], 1, -6)
local boundary = tonumber(redis.call('GET', session .. 'clear') or '0')
if boundary == 0 then return {} end
for _, log in ipairs(redis.call('SMEMBERS', session .. 'cleared')) do
  local entries = redis.call('XRANGE', log, '-', '+', 'COUNT', ARGV[1])
  if #entries > 0 then
    local batch = { log }
    for _, entry in ipairs(entries) do
      local fields = entry[2]
      for i = 1, #fields, 2 do
        if fields[i] == 'id' then
          batch[#batch + 1] = string.match(entry[1], '^(%d+)')
          batch[#batch + 1] = fields[i + 1]
          break
        end
      end
    end
    return batch
  end
  redis.call('DEL', log)
  redis.call('SREM', session .. 'cleared', log)
end
sweep_checkpoints(session, boundary)
return {}
