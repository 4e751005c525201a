-- SPDX-License-Identifier: MIT
-- Claims every available ready event of a session (CONTRACT.md 3.7): ready, not excluded, and
-- its claim absent or expired. The ready set is a subset of the pending set, so an empty ready
-- set is enough to report 'settled'.
-- KEYS[1] log  KEYS[2] count  KEYS[3] meta  KEYS[4] pending  KEYS[5] ready  KEYS[6] meta-split
-- ARGV[1] holder  ARGV[2] now ms  ARGV[3] expiresAt ms  ARGV[4] excludedCount
-- ARGV[4 + i] excluded index
-- Returns { 'claimed', count, (attempt, failureCount, lastError|false, firstClaimedAt,
--   lastClaimedAt, lastFailedAt|false, lastFailedAttempt|false, holder, expiresAt,
--   streamEntry) x count, boundary } | { 'busy', retryAtMs } | { 'settled' } |
--   { 'missing', index }
-- 'missing' (a ready index without a stream entry) returns before any buffered write is
-- flushed, so nothing changes (the client maps it to STORE_UNAVAILABLE, CONTRACT.md Q25).
local COUNTER, META, SPLIT = KEYS[2], KEYS[3], KEYS[6]
--#include meta.lua
local ready = redis.call('ZRANGE', KEYS[5], 0, -1)
local excluded = {}
for i = 1, tonumber(ARGV[4]) do excluded[ARGV[4 + i]] = true end
local candidates = {}
for _, field in ipairs(ready) do
  if not excluded[field] then candidates[#candidates + 1] = field end
end
local rows = read_fields(candidates, { 'ce', 'd', 'fc', 'a', 'e', 'lf', 'lfa' })
local claimed = {}
local retry_at = nil
for _, field in ipairs(candidates) do
  local row = rows[field]
  local expires = tonumber(row[1] or '0')
  if expires > tonumber(ARGV[2]) then
    if not retry_at or expires < retry_at then retry_at = expires end
  else
    local entries = redis.call('XRANGE', KEYS[1], field .. '-0', field .. '-0')
    if #entries == 0 then return { 'missing', field } end
    local attempt = tostring(tonumber(row[2] or '0') + 1)
    local first_claimed = row[3] or ARGV[2]
    local meta_key = mkey(field)
    put(meta_key, field .. ':d', attempt)
    put(meta_key, field .. ':fc', first_claimed)
    put(meta_key, field .. ':lc', ARGV[2])
    put(meta_key, field .. ':ch', ARGV[1])
    put(meta_key, field .. ':ce', ARGV[3])
    claimed[#claimed + 1] = {
      attempt,
      row[4] or '0',
      row[5] or false,
      first_claimed,
      ARGV[2],
      row[6] or false,
      row[7] or false,
      ARGV[1],
      ARGV[3],
      entries[1]
    }
  end
end
flush()
if #claimed > 0 then
  local result = { 'claimed', tostring(#claimed) }
  for _, claim in ipairs(claimed) do
    for _, value in ipairs(claim) do result[#result + 1] = value end
  end
  result[#result + 1] = tostring(boundary)
  return result
end
if retry_at then return { 'busy', tostring(retry_at) } end
return { 'settled' }
