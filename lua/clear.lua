-- SPDX-License-Identifier: MIT
-- @keys log count meta meta-split marker-id pending ready work
-- @argv session now if_last_index cause_index cause_attempt marker notify marker_type
-- Clears a session (docs/semantics.md#clear): appends a clear marker at head + 1 and makes it the
-- new boundary. The old lifetime's log moves aside in one RENAME (to p:S:cleared:<marker>, listed
-- in p:S:cleared), so every read of the log starts at the marker, and its queues are unlinked, so
-- claims and pending checks see only the new lifetime; reclaim drains the moved log later.
-- KEYS[1] log  KEYS[2] count  KEYS[3] meta  KEYS[4] meta-split  KEYS[5] id key of the marker id
-- KEYS[6] pending  KEYS[7] ready  KEYS[8] work (p:work, the work index:
-- docs/redis-layout.md#work-index)
-- ARGV[1] session id  ARGV[2] now ms  ARGV[3] ifLastIndex|''  ARGV[4] cause index|''
-- ARGV[5] cause attempt|''  ARGV[6] marker id  ARGV[7] notify channel  ARGV[8] marker type
-- Returns { 'ok', cleared '0'|'1', head, boundary } | { 'no_parent', causeIndex } |
--   { 'superseded', causeIndex } | { 'foreign' }
-- Verdict order: cause (boundary, range, attempt/dead letter), ifLastIndex already applied
-- (boundary == ifLastIndex + 1), ifLastIndex lost the race, nothing to clear, marker id already
-- owned (any record, even a free one of this session), then apply.
-- The marker type is the store's clear_event_type option (default "a2.clear"), which must match
-- the TypeScript services sharing the database (docs/semantics.md#Q1).
-- A clear that applies removes the session's work index entry (ZREM) before its wake-up.
local COUNTER, META, SPLIT, WORK = KEYS[2], KEYS[3], KEYS[4], KEYS[8]
--#include meta.lua
--#include wake.lua
--#include work.lua
local counts = redis.call('MGET', COUNTER, SPLIT, CLEAR, KEYS[5])
local head = tonumber(counts[1] or '0')
use_split(counts[2], counts[1], counts[3])
if ARGV[4] ~= '' then
  local field = ARGV[4]
  local pidx = tonumber(field)
  if pidx <= boundary then return { 'superseded', field } end
  if pidx < 1 or pidx > head then return { 'no_parent', field } end
  local row = read_fields({ field }, { 'd', 'f' })[field]
  if tonumber(row[1] or '0') ~= tonumber(ARGV[5]) or row[2] then
    return { 'superseded', field }
  end
end
local expected = ARGV[3]
if expected ~= '' and boundary == tonumber(expected) + 1 then
  return { 'ok', '1', decimal(head), decimal(boundary) }
end
if expected ~= '' and tonumber(expected) ~= head then
  return { 'ok', '0', decimal(head), decimal(boundary) }
end
if head == 0 or boundary == head then
  return { 'ok', '1', decimal(head), decimal(boundary) }
end
if counts[4] then return { 'foreign' } end
local field = decimal(head + 1)
local session = string.sub(COUNTER, 1, -6)
local moved = session .. 'cleared:' .. field
redis.call('RENAME', KEYS[1], moved)
redis.call('UNLINK', KEYS[6], KEYS[7])
redis.call('SADD', session .. 'cleared', moved)
redis.call('XADD', KEYS[1], field .. '-0',
  'id', ARGV[6], 'type', ARGV[8], 'payload', 'null',
  'created_at', ARGV[2], 'cause', '', 'lane', '')
-- The owner record [session, index], the bytes cjson.encode({ ARGV[1], head + 1 }) makes below
-- 10^14 (json.lua), exact above.
local owner = '[' .. json_string(ARGV[1]) .. ',' .. field .. ']'
local writes = { KEYS[5], owner, COUNTER, field, CLEAR, field }
split_write(writes)
redis.call('MSET', unpack(writes))
put(mkey(field), field .. ':p', ARGV[2])
flush()
work_remove()
wake_add(field, ARGV[6], ARGV[8], 'null')
wake(ARGV[7], field, ARGV[2])
return { 'ok', '1', field, field }
