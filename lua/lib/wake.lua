-- SPDX-License-Identifier: MIT
-- WAKE_LUA: wake-up messages carry the events they announce, so a subscribed reader that is
-- caught up applies them without reading the stream:
--   {"f":<frontier>,"t":<createdAt>,"e":[[<index>,<id JSON>,<type JSON>,<payload>],...]}
-- Payloads are the stored JSON text, inlined verbatim. A batch over 32768 bytes
-- (WAKE_PAYLOAD_LIMIT, counted as the sum of len(entry) + 1, the envelope not counted) publishes
-- {"f":<frontier>} and readers catch up with XRANGE. Publishing failures are ignored (pcall):
-- wake-ups are a latency aid, delivery relies on catch-up reads.
-- With `no_work` (an append or completion that did not lower the work index entry)
-- the message ends with ,"w":0 (…,"w":0} or {"f":<frontier>,"w":0}): the work watch does not
-- report it (docs/redis-layout.md#wake-up-messages); feeds ignore the member.
--#include json.lua
local wake_entries, wake_bytes = {}, 0
local function wake_add(field, id, typ, payload)
  if wake_bytes + #payload > 32768 then
    wake_bytes = 32768 + 1
    return
  end
  local entry = '[' .. field .. ',' .. json_string(id) .. ',' .. json_string(typ) .. ',' ..
    payload .. ']'
  wake_bytes = wake_bytes + #entry + 1
  if wake_bytes <= 32768 then
    wake_entries[#wake_entries + 1] = entry
  end
end
local function wake(channel, frontier, created_at, no_work)
  local tail = '}'
  if no_work then tail = ',"w":0}' end
  local message
  if wake_bytes <= 32768 then
    message = '{"f":' .. frontier .. ',"t":' .. created_at .. ',"e":[' ..
      table.concat(wake_entries, ',') .. ']' .. tail
  else
    message = '{"f":' .. frontier .. tail
  end
  redis.pcall('PUBLISH', channel, message)
end
