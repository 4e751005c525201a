-- SPDX-License-Identifier: MIT
-- WORK_LUA: the work index (docs/redis-layout.md#work-index, docs/semantics.md#work-discovery),
-- the sorted set p:work (member = session id, score = the time from which the session may have
-- claimable work). The including script binds COUNTER (p:S:count) and WORK (p:work, its last
-- KEYS entry). Each write changes the session's entry with at most one command.
-- The session id is the text of the counter key between the prefix (which holds no ':') and
-- ':count', so no script needs it as an argument.
local WORK_SESSION = string.sub(COUNTER, string.find(COUNTER, ':', 1, true) + 1, -7)
-- lower(E, at): ZADD LT adds a missing entry and moves an existing one only earlier.
local function work_lower(at) redis.call('ZADD', WORK, 'LT', at, WORK_SESSION) end
-- lower(E, at), true when it added or moved the entry (CH counts changed members too).
local function work_lower_changed(at)
  return redis.call('ZADD', WORK, 'LT', 'CH', at, WORK_SESSION) == 1
end
-- E := at.
local function work_set(at) redis.call('ZADD', WORK, at, WORK_SESSION) end
local function work_remove() redis.call('ZREM', WORK, WORK_SESSION) end
-- The work signal of a write that lowered the entry and publishes no wake-up of its own: a
-- wake-up with the frontier alone (docs/redis-layout.md#wake-up-messages), which feeds whose
-- cursor is at the head ignore. Failures are ignored like wake-ups'.
local function work_signal(head)
  redis.pcall('PUBLISH', string.sub(COUNTER, 1, -6) .. 'notify', '{"f":' .. head .. '}')
end
