-- SPDX-License-Identifier: MIT
-- @keys count meta meta-split work
-- @argv holder now expires_at n {index attempt}*n
-- Extends the leases of live claims held by `holder` (docs/semantics.md#renew_claims).
-- KEYS[1] count  KEYS[2] meta  KEYS[3] meta-split  KEYS[4] work (p:work, the work index:
-- docs/redis-layout.md#work-index)
-- ARGV[1] holder  ARGV[2] now ms  ARGV[3] expiresAt ms  ARGV[4] n, then per claim:
-- ARGV[4 + 2i - 1] index, ARGV[4 + 2i] attempt
-- Returns { renewedCount, renewedIndex..., supersededIndex... } (indexes at or below the clear
-- boundary are superseded and listed last; indexes above the head and claims not renewed for
-- another reason are in neither list).
-- A claim is renewed iff expiresAt > now, the event is neither processed nor dead-lettered, the
-- holder matches, the lease is still live (ce > now) and attemptCount EQUALS the attempt
-- (decision docs/semantics.md#Q11; seed-R accepted attemptCount <= attempt). attemptCount > attempt
-- is superseded.
-- Work index: when it renewed anything, ZADD LT CH of the session's entry to expiresAt (a lease
-- renewed to end before the entry makes its event claimable sooner), and the work signal
-- {"f":<head>} only when that moved the entry (an extension moves nothing).
local COUNTER, META, SPLIT, WORK = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
--#include meta.lua
--#include work.lua
local counts = redis.call('MGET', COUNTER, SPLIT, CLEAR)
local total = tonumber(counts[1] or '0')
use_split(counts[2], counts[1], counts[3])
local claims, fields, cleared = {}, {}, {}
for i = 1, tonumber(ARGV[4]) do
  local field = ARGV[4 + (i - 1) * 2 + 1]
  local idx = tonumber(field)
  if idx <= boundary then
    cleared[#cleared + 1] = field
  elseif idx >= 1 and idx <= total then
    claims[#claims + 1] = { field = field, attempt = tonumber(ARGV[4 + (i - 1) * 2 + 2]) }
    fields[#fields + 1] = field
  end
end
local rows = read_fields(fields, { 'd', 'ce', 'p', 'f', 'ch' })
local renewed = {}
local superseded = {}
for _, claim in ipairs(claims) do
  local row = rows[claim.field]
  local dispatches = tonumber(row[1] or '0')
  if dispatches > claim.attempt then
    superseded[#superseded + 1] = claim.field
  elseif dispatches == claim.attempt and tonumber(ARGV[3]) > tonumber(ARGV[2]) and
         not row[3] and not row[4] and row[5] == ARGV[1] and
         tonumber(row[2] or '0') > tonumber(ARGV[2]) then
    put(mkey(claim.field), claim.field .. ':ce', ARGV[3])
    renewed[#renewed + 1] = claim.field
  end
end
flush()
if #renewed > 0 and work_lower_changed(ARGV[3]) then work_signal(total) end
for _, field in ipairs(cleared) do superseded[#superseded + 1] = field end
local result = { decimal(#renewed) }
for i = 1, #renewed do result[#result + 1] = renewed[i] end
for i = 1, #superseded do result[#result + 1] = superseded[i] end
return result
