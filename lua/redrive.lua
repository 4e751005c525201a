-- SPDX-License-Identifier: MIT
-- @keys count meta pending ready meta-split work
-- @argv index action now
-- Redrives a dead letter (docs/semantics.md#redrive): 'retry' makes it claimable again (failedAt
-- and the failure count removed; ready when unlaned or its lane's head), 'skip' settles it
-- (processedAt = now) and hands its lane to the next unfinished event. Acts only on an
-- unfinished, dead-lettered event above the clear boundary; anything else is left unchanged.
-- KEYS[1] count  KEYS[2] meta  KEYS[3] pending  KEYS[4] ready  KEYS[5] meta-split
-- KEYS[6] work (p:work, the work index: docs/redis-layout.md#work-index)
-- ARGV[1] index  ARGV[2] 'retry' | 'skip'  ARGV[3] now ms
-- Returns { redriven '0'|'1', hasPending '0'|'1' } (hasPending evaluated after the change)
-- A redrive (retry or skip) lowers the session's work index entry to now (ZADD LT) and
-- publishes the work signal {"f":<head>}.
local COUNTER, META, SPLIT, PENDING, READY = KEYS[1], KEYS[2], KEYS[5], KEYS[3], KEYS[4]
local WORK = KEYS[6]
--#include meta.lua
--#include enqueue.lua
--#include settle.lua
--#include work.lua
local function result(redriven)
  return { redriven, redis.call('ZCARD', PENDING) > 0 and '1' or '0' }
end
local counts = redis.call('MGET', COUNTER, SPLIT, CLEAR)
local total = tonumber(counts[1] or '0')
use_split(counts[2], counts[1], counts[3])
local idx = tonumber(ARGV[1])
if idx <= boundary or idx > total then return result('0') end
local field = decimal(idx)
local row = read_fields({ field }, { 'p', 'f', 'l', 'next' })[field]
if row[1] or not row[2] then return result('0') end
local meta_key = mkey(field)
local lane = row[3] or ''
if ARGV[2] == 'skip' then
  put(meta_key, field .. ':p', ARGV[3])
  settle(field, lane, row[4])
  flush_queue()
  flush()
else
  redis.call('HDEL', meta_key, field .. ':f', field .. ':a')
  if lane == '' or redis.call('HGET', META, lane_field(lane, 'head')) == field then
    redis.call('ZADD', READY, idx, field)
  end
end
work_lower(ARGV[3])
work_signal(decimal(total))
return result('1')
