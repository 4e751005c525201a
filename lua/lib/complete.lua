-- SPDX-License-Identifier: MIT
-- COMPLETE_LUA: the completion rules (docs/semantics.md#complete_attempt), shared by
-- complete_attempt.lua (one completion) and complete_attempts.lua (a batch, all checks before the
-- first write). The including script binds COUNTER, META, SPLIT, PENDING, READY and PIN_COUNTS
-- (p:S:snapshot-pin-counts) and WORK (p:work); KEYS[1] is the log.
-- A completion is a table { parent = index text, attempt = number, attempt_text = its ARGV text,
-- n = number of children, at = the ARGV index of n (child i's six values follow at
-- ARGV[at + (i - 1) * 6 + 1 ..]: id, type, payloadJson, lane|'', settled, availableAt|''),
-- key_at = the KEYS offset of the child id keys (KEYS[key_at + i]), pins = the parent's
-- snapshot-pins key }.
--#include json.lua
--#include meta.lua
--#include enqueue.lua
--#include settle.lua
--#include wake.lua
--#include release_pins.lua
--#include work.lua
-- The parent's columns the checks and the settle read (one read_fields).
local COMPLETION_FIELDS = { 'd', 'p', 'pa', 'ri', 'ch', 'f', 'lfa', 'l', 'next' }
local function child_id(c, i) return ARGV[c.at + (i - 1) * 6 + 1] end
-- The checks on the parent's place: at or below the boundary (superseded) or above the head
-- `total` (missing); nil when it is in the lifetime.
local function completion_place(c, total)
  local index = tonumber(c.parent)
  if index <= boundary then return { 'superseded' } end
  if index < 1 or index > total then return { 'missing' } end
  return nil
end
-- The checks on the parent's row (COMPLETION_FIELDS) and the children's owner records `owners`
-- (id_owners.lua's, false when free). An already processed parent: the replay checks
-- (superseded / partial / rows); else the fence (superseded) and the child owners (partial with
-- the id). nil: the completion applies. Reads only (one XRANGE per child of a replay).
-- A replay answers { 'rows', (streamEntry, columns) x n }: its children as stored at the start
-- of the call, the columns being ROW_FIELDS (meta.lua, one read_fields), so the caller needs no
-- read after the script (docs/semantics.md#S137).
local function completion_check(c, row, owners, session)
  local parent, attempt, n = c.parent, c.attempt, c.n
  if row[2] then
    -- Already processed: a retry of this completion is recognised when the attempt, the recorded
    -- child ids and the stored children all match.
    if tonumber(row[3] or '0') ~= attempt then return { 'superseded' } end
    if not row[4] then return { 'partial' } end
    local recorded_ids = cjson.decode(row[4])
    if #recorded_ids ~= n then return { 'partial' } end
    for i = 1, n do
      if recorded_ids[i] ~= child_id(c, i) then return { 'partial' } end
    end
    local indexes, entries_of = {}, {}
    for i = 1, n do
      if not owners[i] then return { 'partial' } end
      local rec = cjson.decode(owners[i])
      if rec[1] ~= session then return { 'partial' } end
      local entries = redis.call('XRANGE', KEYS[1], decimal(rec[2]) .. '-0', decimal(rec[2]) .. '-0')
      if #entries == 0 then return { 'partial' } end
      -- Decision docs/semantics.md#Q3: the stored child must have been written by this
      -- completion, i.e. its cause is {index = parent, attempt = attempt}.
      local fields, cause = entries[1][2], nil
      for f = 1, #fields, 2 do
        if fields[f] == 'cause' then
          cause = fields[f + 1]
          break
        end
      end
      if not cause or cause == '' then return { 'partial' } end
      local decoded, parsed = pcall(cjson.decode, cause)
      if not decoded or type(parsed) ~= 'table' or tonumber(parsed.index) ~= tonumber(parent) or
         tonumber(parsed.attempt) ~= attempt then
        return { 'partial' }
      end
      indexes[#indexes + 1] = decimal(rec[2])
      entries_of[#entries_of + 1] = entries[1]
    end
    local columns = read_fields(indexes, ROW_FIELDS)
    local result = { 'rows' }
    for i, idx in ipairs(indexes) do
      result[#result + 1] = entries_of[i]
      result[#result + 1] = columns[idx]
    end
    return result
  end
  if tonumber(row[1] or '0') ~= attempt then return { 'superseded' } end
  if not row[5] or row[6] or tonumber(row[7] or '0') == attempt then
    return { 'superseded' }
  end
  for i = 1, n do
    if owners[i] then return { 'partial', child_id(c, i) } end
  end
  return nil
end
-- Applies checked completions, `applied` = { { completion, row }, ... } in list order, after a
-- head of `total`: the parents (p, pa, ri buffered; one HDEL of ch, ce per hash; settle_all; the
-- pin release of each), then the children of each in order (indexes total + 1 ..., each
-- completion's after those of the ones before it), one MSET of owner records, count and split,
-- flush_queue, flush and one wake-up when there are children. With `indexed` (no claim_next
-- follows, whose claim sets the entry itself) it lowers the session's work index entry before the
-- wake-up when it wrote unsettled children (to the earliest of their availableAt, else now) or
-- handed a lane on (to now), and then publishes a frontier-only work signal when there is no
-- wake-up (no children); a wake-up of a call that lowered nothing is marked no-work (wake.lua),
-- so exactly the completions that lower the entry signal. Sets `first` of each completion (its first child's index; the next free
-- index when it has none). For one completion these are exactly the commands of
-- complete_attempt.lua's fast path.
local function apply_completions(applied, total, session, now, notify, indexed)
  local deletes, delete_order, settles = {}, {}, {}
  for i, entry in ipairs(applied) do
    local c, row = entry[1], entry[2]
    local parent = c.parent
    -- The JSON array of the child ids, the bytes cjson.encode makes of the list (json_string;
    -- cjson would encode an empty table as {}).
    local returned_ids = {}
    for k = 1, c.n do returned_ids[k] = json_string(child_id(c, k)) end
    local parent_key = mkey(parent)
    put(parent_key, parent .. ':p', now)
    put(parent_key, parent .. ':pa', c.attempt_text)
    put(parent_key, parent .. ':ri', '[' .. table.concat(returned_ids, ',') .. ']')
    local fields = deletes[parent_key]
    if not fields then
      fields = {}
      deletes[parent_key] = fields
      delete_order[#delete_order + 1] = parent_key
    end
    fields[#fields + 1] = parent .. ':ch'
    fields[#fields + 1] = parent .. ':ce'
    settles[i] = { parent, row[8] or '', row[9] }
  end
  for _, key in ipairs(delete_order) do sliced('HDEL', key, deletes[key]) end
  settle_all(settles)
  for _, entry in ipairs(applied) do release_snapshot_pins(entry[1].pins, PIN_COUNTS) end
  local owner_writes, session_json, head = {}, json_string(session), total
  local work_at, work_at_ms = nil, nil
  if lane_handed_off then work_at, work_at_ms = now, tonumber(now) end
  -- The completions apply in list order (docs/semantics.md#complete_attempts), though every
  -- parent is settled here before any child is written: a lane whose head a later completion of
  -- the call settled passes, in list order, to an unsettled child an earlier one queued in it,
  -- a hand-off (to now, S249), where settling first found the lane empty.
  local headed_after = {}
  for position, event in ipairs(settles) do
    if event[2] ~= '' and headed_here[event[1]] then headed_after[event[2]] = position end
  end
  for position, entry in ipairs(applied) do
    local c = entry[1]
    c.first = head + 1
    -- cjson.encode({ index = tonumber(parent), attempt = attempt }): cjson writes a two-key
    -- table in its hash order, which for these two keys is always index first
    -- (docs/redis-layout.md#value-encodings).
    local cause = '{"index":' .. decimal(tonumber(c.parent)) .. ',"attempt":' ..
      decimal(c.attempt) .. '}'
    for i = 1, c.n do
      local o = c.at + (i - 1) * 6
      head = head + 1
      local field = decimal(head)
      redis.call('XADD', KEYS[1], field .. '-0',
        'id', ARGV[o + 1], 'type', ARGV[o + 2], 'payload', ARGV[o + 3],
        'created_at', now, 'cause', cause, 'lane', ARGV[o + 4])
      owner_writes[#owner_writes + 1] = KEYS[c.key_at + i]
      owner_writes[#owner_writes + 1] = '[' .. session_json .. ',' .. field .. ']'
      wake_add(field, ARGV[o + 1], ARGV[o + 2], ARGV[o + 3])
      if ARGV[o + 5] == '1' then
        put(mkey(field), field .. ':p', now)
      else
        enqueue(field, ARGV[o + 4])
        local at = now
        if ARGV[o + 6] ~= '' then
          put(mkey(field), field .. ':av', ARGV[o + 6])
          if (headed_after[ARGV[o + 4]] or 0) <= position then at = ARGV[o + 6] end
        end
        if not work_at_ms or tonumber(at) < work_at_ms then
          work_at, work_at_ms = at, tonumber(at)
        end
      end
    end
  end
  if head > total then
    owner_writes[#owner_writes + 1] = COUNTER
    owner_writes[#owner_writes + 1] = decimal(head)
    split_write(owner_writes)
    sliced('MSET', nil, owner_writes)
  end
  flush_queue()
  flush()
  local lowered = indexed and work_at ~= nil
  if lowered then work_lower(work_at) end
  if head > total then
    wake(notify, decimal(head), now, not lowered)
  elseif lowered then
    work_signal(decimal(total))
  end
end
