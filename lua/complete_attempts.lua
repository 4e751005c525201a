-- SPDX-License-Identifier: MIT
-- @keys log count meta pending ready snapshot-pin-counts meta-split pins*m id*children work
-- @argv session now m children {index attempt n {id type payload lane settled available_at}*n}*m notify holder expires_at max_events
-- Completes many attempts of one session atomically (docs/semantics.md#complete_attempts), each
-- with the rules of complete_attempt.lua (lua/lib/complete.lua), then claims next for a holder
-- (docs/semantics.md#claim_next, lua/lib/claim.lua). Lua does not roll back, so every check of
-- every completion runs before the first write, against the state at the start; the first error
-- in list order returns and nothing changes.
-- KEYS[1] log  KEYS[2] count  KEYS[3] meta  KEYS[4] pending  KEYS[5] ready
-- KEYS[6] snapshot-pin-counts  KEYS[7] meta-split  KEYS[7 + j] snapshot-pins:<index of
-- completion j>, j = 1..m  KEYS[7 + m + i] id key of child i of the call, i = 1..children
-- (in completion order)  KEYS[8 + m + children] work (p:work, the work index:
-- docs/redis-layout.md#work-index)
-- ARGV[1] session id  ARGV[2] now ms  ARGV[3] m  ARGV[4] children (the total), then per
-- completion: index, attempt, n, then 6 per child as in complete_attempt.lua (id, type,
-- payloadJson, lane|'', settled '1'|'0', availableAt|''); then the notify channel, the
-- claim_next holder|'' (none), expiresAt|'', maxEvents|''
-- Returns { 'missing', j } | { 'partial', j } (a replay that does not match) |
--   { 'partial', j, childId } (a child id owned by a live event): completion j (1-based) failed
--   the call, nothing changed; else { 'done', { C1, ..., Cm }, claimReply|false }, Cj being
--   complete_attempt.lua's reply for completion j ({ 'superseded' } | { 'ok', firstChildIndex } |
--   { 'rows', (streamEntry, columns) x n } for a replay, its child rows as at its place in the
--   list) and claimReply claim_available.lua's (false without a holder).
local COUNTER, META, SPLIT, PENDING, READY = KEYS[2], KEYS[3], KEYS[7], KEYS[4], KEYS[5]
local PIN_COUNTS = KEYS[6]
local m = tonumber(ARGV[3])
local WORK = KEYS[8 + m + tonumber(ARGV[4])]
--#include json.lua
--#include meta.lua
--#include complete.lua
--#include id_owners.lua
--#include claim.lua
-- One MGET: counter, split, boundary and every child id key of the call.
local owners, count = read_owners(7 + m, tonumber(ARGV[4]), ARGV[1])
local total = tonumber(count or '0')
local completions, at, child = {}, 5, 0
for j = 1, m do
  local n = tonumber(ARGV[at + 2])
  local c = { parent = ARGV[at], attempt = tonumber(ARGV[at + 1]), attempt_text = ARGV[at + 1],
    n = n, at = at + 2, key_at = 7 + m + child, pins = KEYS[7 + j], owners = {} }
  for i = 1, n do c.owners[i] = owners[child + i] end
  child = child + n
  at = at + 3 + n * 6
  completions[j] = c
end
-- Checks, before any write. The rows of every parent in the lifetime with one read_fields.
local replies, parents = {}, {}
for j, c in ipairs(completions) do
  replies[j] = completion_place(c, total)
  if not replies[j] then parents[#parents + 1] = c.parent end
end
local rows = read_fields(parents, COMPLETION_FIELDS)
local applied, applied_at = {}, {}
for j, c in ipairs(completions) do
  if not replies[j] then
    -- A replay carries its rows ('rows'), read here, at the start of the call.
    replies[j] = completion_check(c, rows[c.parent], c.owners, ARGV[1])
    if not replies[j] then
      applied[#applied + 1] = { c, rows[c.parent] }
      applied_at[c.parent] = j
    end
  end
  local verdict = replies[j] and replies[j][1]
  if verdict == 'missing' or verdict == 'partial' then
    local failed = { verdict, decimal(j) }
    if replies[j][2] then failed[3] = replies[j][2] end
    return failed
  end
end
-- Apply, in list order.
-- The work index: lowered by the completions without claim_next, else set by the claim.
if #applied > 0 then
  apply_completions(applied, total, ARGV[1], ARGV[2], ARGV[at], (ARGV[at + 1] or '') == '')
end
-- A replay's rows are those at its place in the list: a child of it completed by an earlier
-- completion of this call is read again now (its own completion is the only change to its row
-- before the claim); the other rows are as read at the start.
for j = 1, m do
  local reply = replies[j]  -- nil for an applied completion (ipairs would stop there).
  if reply and reply[1] == 'rows' then
    for r = 2, #reply, 2 do
      local child_index = string.match(reply[r][1], '^(%d+)')
      local at_place = applied_at[child_index]
      if at_place and at_place < j then
        reply[r + 1] = read_fields({ child_index }, ROW_FIELDS)[child_index]
      end
    end
  end
end
for j, c in ipairs(completions) do
  if not replies[j] then replies[j] = { 'ok', decimal(c.first) } end
end
return { 'done', replies, claim_next(at + 1, READY, ARGV[2]) or false }
