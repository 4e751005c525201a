-- SPDX-License-Identifier: MIT
-- @keys count meta pending ready pins snapshot-pin-counts meta-split work
-- @argv index attempt error max_failures now retry_at
-- Records a failure of a claimed attempt (docs/semantics.md#fail_attempt); dead-letters the event
-- when the failure count reaches maxFailures. A failure that is not dead-lettered stores retryAt
-- as the event's `av` (a delayed retry, docs/semantics.md#delayed-work), or deletes `av` when
-- retryAt is ''; a dead-lettering failure ignores retryAt and deletes `av`.
-- KEYS[1] count  KEYS[2] meta  KEYS[3] pending  KEYS[4] ready  KEYS[5] snapshot-pins:<index>
-- KEYS[6] snapshot-pin-counts  KEYS[7] meta-split  KEYS[8] work (p:work, the work index:
-- docs/redis-layout.md#work-index)
-- ARGV[1] index  ARGV[2] attempt  ARGV[3] error text  ARGV[4] maxFailures  ARGV[5] now ms
-- ARGV[6] retryAt ms|'' (the caller passes it only when after now)
-- Returns { 'cleared', '0' } | { 'missing', '0' } | { 'superseded', failures } |
--   { 'dead_lettered', failures } | { 'failed', failures }
-- Verdict order: index <= boundary (cleared), index above the head (missing), processed or
-- attempt mismatch (superseded), already dead-lettered, already recorded failure of this attempt
-- (failed, nothing changes), no claim holder (superseded), then record.
-- A recorded 'failed' lowers the session's work index entry to retryAt or now (ZADD LT) and
-- publishes the work signal {"f":<head>}; a 'dead_lettered' does so (to now) only when the event
-- heads a lane with a next pending event (its `next`), else it leaves the entry.
local COUNTER, META, SPLIT, WORK = KEYS[1], KEYS[2], KEYS[7], KEYS[8]
--#include meta.lua
--#include release_pins.lua
--#include work.lua
local idx = tonumber(ARGV[1])
local counts = redis.call('MGET', COUNTER, SPLIT, CLEAR)
local total = tonumber(counts[1] or '0')
use_split(counts[2], counts[1], counts[3])
if idx <= boundary then return { 'cleared', '0' } end
if idx < 1 or idx > total then return { 'missing', '0' } end
local field = ARGV[1]
local attempt = tonumber(ARGV[2])
local row = read_fields({ field }, { 'a', 'd', 'p', 'f', 'lfa', 'ch', 'l', 'next' })[field]
local failures = tonumber(row[1] or '0')
if row[3] or tonumber(row[2] or '0') ~= attempt then
  return { 'superseded', decimal(failures) }
end
if row[4] then return { 'dead_lettered', decimal(failures) } end
if row[5] and tonumber(row[5]) == attempt and not row[6] then
  return { 'failed', decimal(failures) }
end
if not row[6] then return { 'superseded', decimal(failures) } end
failures = failures + 1
local dead = failures >= tonumber(ARGV[4])
local meta_key = mkey(field)
put(meta_key, field .. ':a', decimal(failures))
put(meta_key, field .. ':e', ARGV[3])
put(meta_key, field .. ':lf', ARGV[5])
put(meta_key, field .. ':lfa', ARGV[2])
if dead then put(meta_key, field .. ':f', ARGV[5]) end
local delayed = not dead and ARGV[6] ~= ''
if delayed then put(meta_key, field .. ':av', ARGV[6]) end
flush()
if delayed then
  redis.call('HDEL', meta_key, field .. ':ch', field .. ':ce')
else
  redis.call('HDEL', meta_key, field .. ':ch', field .. ':ce', field .. ':av')
end
if dead then
  redis.call('ZREM', KEYS[4], field)
  release_snapshot_pins(KEYS[5], KEYS[6])
  if row[7] and row[7] ~= '' and row[8] then
    work_lower(ARGV[5])
    work_signal(decimal(total))
  end
  return { 'dead_lettered', decimal(failures) }
end
work_lower(delayed and ARGV[6] or ARGV[5])
work_signal(decimal(total))
return { 'failed', decimal(failures) }
