-- SPDX-License-Identifier: MIT
-- The a2 Postgres schema (docs/postgres-layout.md): tables of experimental-a2 0.18.0 and one
-- server-side function per write operation. Idempotent: applied by open() on every start, in the
-- schema named by Options::schema (the connection's search_path), under an advisory lock.
--
-- Every write function takes one jsonb argument and returns jsonb, so each write operation is
-- one round trip in autocommit. Inside a plpgsql function every statement takes a fresh snapshot
-- (READ COMMITTED), so a boundary read by a statement that starts after the session lock sees
-- every clear that committed while the lock was awaited
-- (docs/postgres-layout.md#reading-the-boundary).
--
-- Cost rules (Postgres 15; every write is on the hot path):
-- - Helpers are plpgsql, never `language sql`: a SQL function that cannot be inlined (one with a
--   subquery, a CTE or a DML statement) is parsed and planned again on every call, while
--   plpgsql keeps each statement's plan for the life of the connection.
-- - The clear boundary is the inline expression
--   `coalesce((select clear_index from a2_clears where session_id = s), 0)`, for that reason.
-- - No `= any(array)` in a hot statement: its custom plans always look cheaper than the generic
--   one, so plpgsql plans it again on every call. Ids are probed one at a time (unique index,
--   scalar parameter) and the full ownership check (a2_live_owners) runs only on a hit.
-- - "Is there a row" is `order by idx limit 1` (the first entry of an index in its order), never
--   exists(), which the planner may serve with a sequential scan of the whole table when
--   statistics make matching rows look common.
-- - Rows chosen (and locked) by one CTE are reached from the next statement by
--   `ctid = any(array(select ...))`, a TID scan, never by a join on idx (the planner may make it
--   a hash join over all of a session's rows) nor by `idx = any(...)` (it may make that a filter
--   over the session's rows when statistics say the session is small). Rows named by the caller
--   are reached one at a time by their full primary key. The head is `order by idx desc limit
--   1`, never max(idx), which a plan may aggregate over the whole session. The test "writes
--   touch only their rows whatever the statistics say" checks every write's plans.
--
-- Contract errors are raised with these SQLSTATEs (translated in one place in C++):
--   A2001 invalid argument ("no event at index N in session 'S'")
--   A2002 store unavailable (a reused id still held by cleared work)
--   A2003 partial duplicate batch
--   A2004 superseded attempt
--   A2005 session cleared

create table if not exists a2_schema_version (
  version    integer primary key,
  applied_at timestamptz not null default now()
);

create table if not exists a2_events (
  session_id           text    not null,
  idx                  bigint  not null,
  event_id             text    not null,
  event_type           text    not null,
  payload              jsonb,
  created_at           bigint  not null,
  cause                jsonb,
  lane                 text,
  lane_ready           boolean not null default true,
  processed_at         bigint,
  processed_by_attempt integer,
  returned_event_ids   jsonb,
  first_claimed_at     bigint,
  last_claimed_at      bigint,
  attempt_count        integer not null default 0,
  claim_holder         text,
  claim_expires_at     bigint,
  failure_count        integer not null default 0,
  last_failed_at       bigint,
  last_failed_attempt  integer,
  last_error           text,
  failed_at            bigint,
  primary key (session_id, idx),
  constraint a2_events_event_id_key unique (event_id)
);

-- Claims, has_pending, dead letters: only unfinished rows, so cost follows pending work.
create index if not exists a2_events_pending
  on a2_events (session_id, idx) where processed_at is null;
-- lane_ready on insert and the lane handoff.
create index if not exists a2_events_pending_lane
  on a2_events (session_id, lane, idx) where processed_at is null;

create table if not exists a2_snapshots (
  session_id   text   not null,
  reducer_name text   not null,
  up_to_index  bigint not null,
  state        jsonb,
  updated_at   bigint not null,
  primary key (session_id, reducer_name)
);

create table if not exists a2_snapshot_history (
  session_id   text   not null,
  reducer_name text   not null,
  up_to_index  bigint not null,
  state        jsonb,
  updated_at   bigint not null,
  primary key (session_id, reducer_name, up_to_index)
);

create table if not exists a2_snapshot_pins (
  session_id   text   not null,
  reducer_name text   not null,
  up_to_index  bigint not null,
  event_index  bigint not null,
  primary key (session_id, event_index, reducer_name, up_to_index)
);

create index if not exists a2_snapshot_pins_checkpoint
  on a2_snapshot_pins (session_id, reducer_name, up_to_index);

create table if not exists a2_clears (
  session_id  text   primary key,
  clear_index bigint not null
);

create table if not exists a2_presence (
  ns          text   not null,
  participant text   not null,
  state       jsonb  not null,
  source      text,
  expires_at  bigint not null,
  primary key (ns, participant)
);

insert into a2_schema_version (version) values (1) on conflict (version) do nothing;

-- The session's latest clear marker, or 0. Read it in a statement that starts after the
-- operation's lock (see the header). The functions and statements of a2 inline its body (see
-- the cost rules above); it stays for compatibility.
create or replace function a2_clear_index_of(s text) returns bigint
language sql stable as $$
  select coalesce((select clear_index from a2_clears where session_id = s), 0)
$$;

-- Wakes live feeds of session s after commit (NOTIFY is sent once per transaction and payload).
-- The write functions inline its body; it stays for compatibility.
create or replace function a2_notify(s text) returns void
language plpgsql as $$
begin
  perform pg_notify('a2_events', case when octet_length(s) < 8000 then s else md5(s) end);
end $$;

create or replace function a2_superseded(s text, cause_index bigint, cause_attempt bigint)
returns void language plpgsql as $$
begin
  raise exception using errcode = 'A2004',
    message = format('attempt %s no longer owns event %s in session ''%s''',
                     cause_attempt, cause_index, s);
end $$;

create or replace function a2_no_event(s text, i bigint) returns void
language plpgsql as $$
begin
  raise exception using errcode = 'A2001',
    message = format('no event at index %s in session ''%s''', i, s);
end $$;

-- The live rows owning `ids`, ordered by idx. This session's rows below its boundary do not own
-- their ids: their ids are released here so they can be reused. Such rows are never waited on
-- (cleared work holding one may itself wait for the session lock the caller holds). The seed
-- deletes them; renaming their id to a tombstone instead leaves the old event for reclaim, so
-- reclaim's total stays "every old event" (docs/semantics.md#Q12) on every backend. A tombstone is
-- longer than any caller id can be (kMaxEventIdBytes = @A2_MAX_EVENT_ID_BYTES@), so it never collides with one.
create or replace function a2_live_owners(s text, ci bigint, ids text[])
returns setof a2_events language plpgsql as $$
declare
  stale_count bigint;
  released_count bigint;
begin
  select count(*) into stale_count from a2_events
   where event_id = any(ids) and session_id = s and idx < ci;
  if stale_count > 0 then
    with stale as materialized (
      select ctid as row_id from a2_events
       where session_id = s and event_id = any(ids) and idx < ci
       order by idx
       for update skip locked
    ), released as (
      update a2_events event set event_id = repeat(chr(1), @A2_TOMBSTONE_ID_PREFIX_BYTES@) || s || chr(1) || event.idx
       where event.ctid = any(array(select row_id from stale))
      returning event.idx
    )
    select count(*) into released_count from released;
    if released_count < stale_count then
      raise exception using errcode = 'A2002',
        message = format('an event id being reused is still held by cleared work in session ''%s''', s);
    end if;
  end if;
  return query select * from a2_events where event_id = any(ids) order by idx;
end $$;

-- Inserts a batch at base+1.. (one statement). A laned unsettled event is ready unless an
-- unfinished event of its lane in this lifetime precedes it (earlier batch members count).
-- Returns the new rows as a jsonb array in index order.
create or replace function a2_insert_batch(s text, base bigint, ci bigint, now_ms bigint,
                                           events jsonb, parent_cause jsonb)
returns jsonb language plpgsql as $$
declare
  inserted_rows jsonb;
  one_event jsonb;
begin
  if jsonb_array_length(events) = 1 then
    -- One event (the common case): no ranking; the same columns as the batch statement below.
    one_event := events->0;
    insert into a2_events as ins (session_id, idx, event_id, event_type, payload, created_at,
                                  cause, lane, lane_ready, processed_at)
    values (s, base + 1, one_event->>'id', one_event->>'type',
            coalesce(one_event->'payload', 'null'::jsonb), now_ms,
            coalesce(parent_cause, nullif(one_event->'cause', 'null'::jsonb)), one_event->>'lane',
            one_event->>'lane' is null or (
              select pending.idx from a2_events pending
               where pending.session_id = s and pending.lane = one_event->>'lane'
                 and pending.processed_at is null and pending.idx > ci
               order by pending.idx limit 1
            ) is null,
            case when coalesce((one_event->>'settled')::boolean, false) then now_ms end)
    returning jsonb_build_array(to_jsonb(ins)) into inserted_rows;
    return inserted_rows;
  end if;
  with input as (
    select ord, e->>'id' as event_id, e->>'type' as event_type,
           coalesce(e->'payload', 'null'::jsonb) as payload,
           coalesce(parent_cause, nullif(e->'cause', 'null'::jsonb)) as cause,
           e->>'lane' as lane,
           coalesce((e->>'settled')::boolean, false) as settled
      from jsonb_array_elements(events) with ordinality as t(e, ord)
  ), ranked as (
    select input.*,
           count(*) filter (where not settled) over (
             partition by lane order by ord rows between unbounded preceding and 1 preceding
           ) as earlier_unsettled
      from input
  ), inserted as (
    insert into a2_events (session_id, idx, event_id, event_type, payload, created_at, cause,
                           lane, lane_ready, processed_at)
    select s, base + ord, event_id, event_type, payload, now_ms, cause, lane,
           lane is null or (
             earlier_unsettled = 0 and (
               select pending.idx from a2_events pending
                where pending.session_id = s and pending.lane = ranked.lane
                  and pending.processed_at is null and pending.idx > ci
                order by pending.idx limit 1
             ) is null
           ),
           case when settled then now_ms end
      from ranked
    returning *
  )
  select coalesce(jsonb_agg(to_jsonb(inserted) order by idx), '[]'::jsonb) into inserted_rows
    from inserted;
  return inserted_rows;
end $$;

-- Releases event e's snapshot pins and deletes history checkpoints left without pins.
create or replace function a2_release_pins(s text, e bigint) returns void
language plpgsql as $$
begin
  with released as (
    delete from a2_snapshot_pins where session_id = s and event_index = e
    returning reducer_name, up_to_index
  )
  delete from a2_snapshot_history history using released
   where history.session_id = s
     and history.reducer_name = released.reducer_name
     and history.up_to_index = released.up_to_index
     and not exists (
       select 1 from a2_snapshot_pins pin
        where pin.session_id = s and pin.reducer_name = released.reducer_name
          and pin.up_to_index = released.up_to_index and pin.event_index <> e
     );
end $$;

-- Hands lane `l` to its lowest unfinished event of the current lifetime.
create or replace function a2_lane_handoff(s text, l text, ci bigint) returns void
language plpgsql as $$
begin
  update a2_events set lane_ready = true
   where session_id = s
     and idx = (
       select idx from a2_events
        where session_id = s and lane = l and processed_at is null and idx > ci
        order by idx limit 1
     );
end $$;

-- append, the common case: one unsettled event without cause, lane or origin, with typed
-- arguments (no request document to parse). Its only possible verdicts are ok and, when a row
-- already holds the id, replay or foreign, so one statement after the session lock does it: the
-- head, the insert, and the id check as `on conflict (event_id) do nothing` (a row holding the
-- id, committed or being inserted by another transaction, which is awaited, makes it insert
-- nothing). Returns the new event's index as a jsonb number: the event is pending work, so the
-- caller knows has_pending and every column of the row without reading it back. When the id is
-- taken it returns what a2_append returns for the same request (replay, or the foreign id's
-- error), in the same call and under the same lock (advisory locks are re-entrant).
create or replace function a2_append_one(s text, now_ms bigint, new_id text, new_type text,
                                         new_payload jsonb) returns jsonb
language plpgsql as $$
declare
  inserted bigint;
begin
  perform pg_advisory_xact_lock(hashtext(s));
  insert into a2_events (session_id, idx, event_id, event_type, payload, created_at)
  select s, coalesce((select head.idx from a2_events head where head.session_id = s
                       order by head.idx desc limit 1), 0) + 1,
         new_id, new_type, new_payload, now_ms
  on conflict (event_id) do nothing
  returning idx into inserted;
  if inserted is null then
    return a2_append(jsonb_build_object(
      's', s, 'now', now_ms, 'origin', null,
      'events', jsonb_build_array(jsonb_build_object(
        'id', new_id, 'type', new_type, 'payload', new_payload,
        'cause', null, 'lane', null, 'settled', false))));
  end if;
  perform pg_notify('a2_events', case when octet_length(s) < 8000 then s else md5(s) end);
  return to_jsonb(inserted);
end $$;

-- append. p: {s, now, origin|null, events: [{id, type, payload, cause|null, lane|null, settled}]}
-- Returns {events: [...], has_pending}.
create or replace function a2_append(p jsonb) returns jsonb
language plpgsql as $$
declare
  s text := p->>'s';
  now_ms bigint := (p->>'now')::bigint;
  origin bigint := (p->>'origin')::bigint;
  events jsonb := p->'events';
  n integer := jsonb_array_length(p->'events');
  ids text[];
  base bigint;
  ci bigint;
  session_has_pending boolean;
  owners a2_events[] := '{}';
  one_id text;
  o a2_events;
  e jsonb;
  i integer;
  cause_index bigint;
  cause_attempt bigint;
  parent record;
  inserted jsonb;
begin
  if n = 0 then
    return jsonb_build_object('events', '[]'::jsonb, 'has_pending', (
      select idx from a2_events
       where session_id = s and processed_at is null
         and idx > coalesce((select clear_index from a2_clears where session_id = s), 0)
       order by idx limit 1) is not null);
  end if;
  -- Serialize appends per session: index assignment must not race across writers.
  perform pg_advisory_xact_lock(hashtext(s));
  -- One statement after the lock: the boundary, the head and the lowest pending index. The
  -- pending row is an ordered scan with limit 1, which stops at the first entry of the partial
  -- index a2_events_pending (an exists() may be planned as a sequential scan).
  select boundary.ci, head.base, pending.idx is not null
    into ci, base, session_has_pending
    from (select coalesce((select clear_index from a2_clears where session_id = s), 0)
            as ci) boundary
    cross join lateral (
      select coalesce((select idx from a2_events where session_id = s
                        order by idx desc limit 1), 0) as base
    ) head
    left join lateral (
      select p_row.idx from a2_events p_row
       where p_row.session_id = s and p_row.processed_at is null and p_row.idx > boundary.ci
       order by p_row.idx limit 1
    ) pending on true;

  ids := array(select x->>'id' from jsonb_array_elements(events) x);
  -- Usually no row holds any of the ids: one unique-index probe per id (a scalar parameter, so
  -- the cached generic plan is used; `= any(array)` would be re-planned on every call).
  foreach one_id in array ids loop
    if exists(select 1 from a2_events where event_id = one_id) then
      owners := array(select o2 from a2_live_owners(s, ci, ids) o2);
      exit;
    end if;
  end loop;
  if cardinality(owners) > 0 then
    -- A foreign id wins wherever it sits; name the first in batch order.
    for i in 1 .. n loop
      foreach o in array owners loop
        if o.event_id = ids[i] and o.session_id <> s then
          raise exception using errcode = 'A2003',
            message = format('event id ''%s'' already belongs to another session', ids[i]);
        end if;
      end loop;
    end loop;
    if cardinality(owners) < n then
      raise exception using errcode = 'A2003',
        message = format('%s of %s event ids of the batch already exist in session ''%s''',
                         cardinality(owners), n, s);
    end if;
    -- Replay (Q6): n consecutive rows matching the request position by position.
    for i in 1 .. n loop
      o := owners[i];
      e := events->(i - 1);
      if o.idx <> owners[1].idx + i - 1 or o.event_id <> e->>'id'
         or o.event_type <> e->>'type' or o.lane is distinct from e->>'lane'
         or o.cause is distinct from nullif(e->'cause', 'null'::jsonb) then
        raise exception using errcode = 'A2003',
          message = format('the batch does not match the events stored with its ids in session ''%s''', s);
      end if;
    end loop;
    return jsonb_build_object(
      'events', (select jsonb_agg(to_jsonb(x) order by x.idx) from unnest(owners) x),
      'has_pending', session_has_pending, 'replay', true);
  end if;

  if origin is not null and origin <= ci then
    raise exception using errcode = 'A2005',
      message = format('scheduled work from event %s was cleared in session ''%s''', origin, s);
  end if;

  -- Causes in batch order (Q9): boundary, range, then the attempt fence. The row lock
  -- serializes the fence with claims of the parent.
  for i in 0 .. n - 1 loop
    e := events->i;
    continue when e->'cause' is null or jsonb_typeof(e->'cause') = 'null';
    cause_index := (e->'cause'->>'index')::bigint;
    cause_attempt := (e->'cause'->>'attempt')::bigint;
    if cause_index <= ci then
      perform a2_superseded(s, cause_index, cause_attempt);
    end if;
    if cause_index > base then
      perform a2_no_event(s, cause_index);
    end if;
    select attempt_count, failed_at into parent from a2_events
     where session_id = s and idx = cause_index for update;
    if not found then
      perform a2_no_event(s, cause_index);
    end if;
    if parent.attempt_count <> cause_attempt or parent.failed_at is not null then
      perform a2_superseded(s, cause_index, cause_attempt);
    end if;
  end loop;

  inserted := a2_insert_batch(s, base, ci, now_ms, events, null);
  perform pg_notify('a2_events', case when octet_length(s) < 8000 then s else md5(s) end);
  return jsonb_build_object(
    'events', inserted,
    'has_pending', session_has_pending or exists(
      select 1 from jsonb_array_elements(events) x
       where not coalesce((x->>'settled')::boolean, false)));
end $$;

-- claim_available. p: {s, holder, now, expires, exclude: [idx...]}
-- Returns {verdict: claimed|busy|settled, events, retry_at, clear_index}.
create or replace function a2_claim_available(p jsonb) returns jsonb
language plpgsql as $$
declare
  s text := p->>'s';
  now_ms bigint := (p->>'now')::bigint;
  excluded bigint[] := array(select x::bigint from jsonb_array_elements_text(p->'exclude') x);
  rows_claimed jsonb;
  ci bigint;
  retry bigint;
begin
  -- Eligible rows are locked in index order and updated in one statement, which also reads the
  -- boundary. A claim that waited on a row re-checks only that row, which is why clear sets
  -- lane_ready = false on the clearing handler's row.
  with boundary as materialized (
    select coalesce((select clear_index from a2_clears where session_id = s), 0) as clear_index
  ), eligible as materialized (
    select event.ctid as row_id from a2_events event
     where event.session_id = s
       and event.processed_at is null
       and event.failed_at is null
       and event.lane_ready
       and event.idx > (select clear_index from boundary)
       and (event.claim_expires_at is null or event.claim_expires_at <= now_ms)
       and not (event.idx = any(excluded))
     order by event.idx
     for update of event
  ), updated as (
    update a2_events claimed set
      attempt_count = claimed.attempt_count + 1,
      first_claimed_at = coalesce(claimed.first_claimed_at, now_ms),
      last_claimed_at = now_ms,
      claim_holder = p->>'holder',
      claim_expires_at = (p->>'expires')::bigint
    where claimed.ctid = any(array(select row_id from eligible))
    returning claimed.*
  )
  select (select jsonb_agg(to_jsonb(updated) order by idx) from updated),
         (select clear_index from boundary)
    into rows_claimed, ci;
  if rows_claimed is not null then
    return jsonb_build_object('verdict', 'claimed', 'events', rows_claimed, 'clear_index', ci);
  end if;
  -- Q10: excluded events count neither as claimable nor as busy.
  select min(claim_expires_at) into retry from a2_events
   where session_id = s
     and processed_at is null
     and failed_at is null
     and lane_ready
     and idx > coalesce((select clear_index from a2_clears where session_id = s), 0)
     and claim_expires_at > now_ms
     and not (idx = any(excluded));
  if retry is not null then
    return jsonb_build_object('verdict', 'busy', 'retry_at', retry);
  end if;
  return jsonb_build_object('verdict', 'settled');
end $$;

-- renew_claims. p: {s, holder, now, expires, claims: [{index, attempt}]}
-- Returns {renewed: [...], superseded: [...]}. Q11: the attempt must be equal.
-- One row at a time, each reached by its full primary key in index order (the order claims lock
-- in), so no plan ever reads the rest of the session. Each update reads the boundary itself.
create or replace function a2_renew_claims(p jsonb) returns jsonb
language plpgsql as $$
declare
  s text := p->>'s';
  now_ms bigint := (p->>'now')::bigint;
  expires bigint := (p->>'expires')::bigint;
  holder text := p->>'holder';
  idxs bigint[];
  attempts bigint[];
  extended bigint[] := '{}';
  renewed bigint[] := '{}';
  superseded bigint[] := '{}';
  ci bigint;
begin
  select coalesce(array_agg(listed.idx order by listed.idx, listed.attempt), '{}'),
         coalesce(array_agg(listed.attempt order by listed.idx, listed.attempt), '{}')
    into idxs, attempts
    from (select distinct (c->>'index')::bigint as idx, (c->>'attempt')::bigint as attempt
            from jsonb_array_elements(p->'claims') c) listed;
  if expires > now_ms then
    for i in 1 .. coalesce(array_length(idxs, 1), 0) loop
      continue when idxs[i] = any(extended);
      update a2_events set claim_expires_at = expires
       where session_id = s and idx = idxs[i]
         and idx > coalesce((select clear_index from a2_clears where session_id = s), 0)
         and attempt_count = attempts[i]
         and processed_at is null
         and failed_at is null
         and claim_holder = holder
         and claim_expires_at > now_ms;
      if found then
        extended := extended || idxs[i];
      end if;
    end loop;
  end if;
  ci := coalesce((select clear_index from a2_clears where session_id = s), 0);
  for i in 1 .. coalesce(array_length(idxs, 1), 0) loop
    if idxs[i] = any(extended) then
      renewed := renewed || idxs[i];
    elsif idxs[i] <= ci or coalesce((select attempt_count > attempts[i] from a2_events
                                      where session_id = s and idx = idxs[i]), false) then
      superseded := superseded || idxs[i];
    end if;
  end loop;
  return jsonb_build_object('renewed', to_jsonb(renewed), 'superseded', to_jsonb(superseded));
end $$;

-- complete_attempt. p: {s, index, attempt, now, children: [{id, type, payload, lane, settled}]}
-- Returns {verdict: completed|superseded, events}.
create or replace function a2_complete_attempt(p jsonb) returns jsonb
language plpgsql as $$
declare
  s text := p->>'s';
  i bigint := (p->>'index')::bigint;
  attempt bigint := (p->>'attempt')::bigint;
  now_ms bigint := (p->>'now')::bigint;
  children jsonb := p->'children';
  ids text[] := array(select x->>'id' from jsonb_array_elements(p->'children') x);
  ci bigint;
  base bigint;
  parent record;
  stored a2_events[];
  r a2_events;
  k integer;
  one_id text;
  inserted jsonb;
begin
  select boundary.clear_index as boundary_index, parent_row.* into parent
    from (select coalesce((select clear_index from a2_clears where session_id = s), 0)
            as clear_index) boundary
    left join lateral (
      select * from a2_events
       where session_id = s and idx = i and idx > boundary.clear_index
       for update
    ) parent_row on true;
  ci := parent.boundary_index;
  if i <= ci then
    return jsonb_build_object('verdict', 'superseded');
  end if;
  if parent.idx is null then
    -- Deleted while this statement waited for its lock, after a clear.
    if i <= coalesce((select clear_index from a2_clears where session_id = s), 0) then
      return jsonb_build_object('verdict', 'superseded');
    end if;
    perform a2_no_event(s, i);
  end if;

  if parent.processed_at is not null then
    -- An idempotent retry of a lost acknowledgement, or not ours.
    if coalesce(parent.processed_by_attempt, 0) <> attempt then
      return jsonb_build_object('verdict', 'superseded');
    end if;
    if parent.returned_event_ids is null or parent.returned_event_ids <> to_jsonb(ids) then
      raise exception using errcode = 'A2003',
        message = format('the retry of the completion of event %s in session ''%s'' does not match its recorded children', i, s);
    end if;
    stored := array(select e from a2_events e where e.event_id = any(ids) order by e.idx);
    if cardinality(stored) < cardinality(ids)
       and i <= coalesce((select clear_index from a2_clears where session_id = s), 0) then
      return jsonb_build_object('verdict', 'superseded');
    end if;
    if cardinality(stored) < cardinality(ids) then
      raise exception using errcode = 'A2003',
        message = format('a child of event %s in session ''%s'' is missing', i, s);
    end if;
    foreach r in array stored loop
      if r.session_id <> s or r.cause is distinct from
         jsonb_build_object('index', i, 'attempt', attempt) then
        raise exception using errcode = 'A2003',
          message = format('child id ''%s'' of event %s in session ''%s'' belongs to another event',
                           r.event_id, i, s);
      end if;
    end loop;
    return jsonb_build_object('verdict', 'completed', 'events',
      coalesce((select jsonb_agg(to_jsonb(x) order by x.idx) from unnest(stored) x), '[]'));
  end if;

  -- The attempt fence: claim expiry and holder identity are not checked.
  if parent.attempt_count <> attempt or parent.claim_holder is null
     or parent.failed_at is not null or parent.last_failed_attempt = attempt then
    return jsonb_build_object('verdict', 'superseded');
  end if;

  -- The parent lock came first; only a statement after the session lock sees every clear that
  -- committed while this one waited.
  perform pg_advisory_xact_lock(hashtext(s));
  select coalesce((select idx from a2_events where session_id = s order by idx desc limit 1), 0),
         coalesce((select clear_index from a2_clears where session_id = s), 0)
    into base, ci;
  if i <= ci then
    return jsonb_build_object('verdict', 'superseded');
  end if;
  -- As in append: the full ownership check only when some row holds one of the ids.
  foreach one_id in array ids loop
    if exists(select 1 from a2_events where event_id = one_id) then
      select count(*) into k from a2_live_owners(s, ci, ids);
      if k > 0 then
        raise exception using errcode = 'A2003',
          message = format('%s child event ids of event %s already exist (session ''%s'')',
                           k, i, s);
      end if;
      exit;
    end if;
  end loop;

  update a2_events set
    processed_at = now_ms,
    processed_by_attempt = attempt,
    returned_event_ids = to_jsonb(ids),
    claim_holder = null,
    claim_expires_at = null
   where session_id = s and idx = i;
  if exists(select 1 from a2_snapshot_pins where session_id = s and event_index = i) then
    perform a2_release_pins(s, i);
  end if;
  if parent.lane is not null then
    perform a2_lane_handoff(s, parent.lane, ci);
  end if;
  if cardinality(ids) = 0 then
    return jsonb_build_object('verdict', 'completed', 'events', '[]'::jsonb);
  end if;
  inserted := a2_insert_batch(s, base, ci, now_ms, children,
                              jsonb_build_object('index', i, 'attempt', attempt));
  perform pg_notify('a2_events', case when octet_length(s) < 8000 then s else md5(s) end);
  return jsonb_build_object('verdict', 'completed', 'events', inserted);
end $$;

-- fail_attempt. p: {s, index, attempt, error, max_failures, now}
-- Returns {verdict: failed|dead_lettered|superseded, failure_count}.
create or replace function a2_fail_attempt(p jsonb) returns jsonb
language plpgsql as $$
declare
  s text := p->>'s';
  i bigint := (p->>'index')::bigint;
  attempt bigint := (p->>'attempt')::bigint;
  now_ms bigint := (p->>'now')::bigint;
  ci bigint;
  cur record;
  failures integer;
  dead boolean;
begin
  select boundary.clear_index as boundary_index, current_row.* into cur
    from (select coalesce((select clear_index from a2_clears where session_id = s), 0)
            as clear_index) boundary
    left join lateral (
      select * from a2_events
       where session_id = s and idx = i and idx > boundary.clear_index
       for update
    ) current_row on true;
  ci := cur.boundary_index;
  if i <= ci then
    return jsonb_build_object('verdict', 'superseded', 'failure_count', 0);
  end if;
  if cur.idx is null then
    -- Deleted while this statement waited for its lock, after a clear.
    if i <= coalesce((select clear_index from a2_clears where session_id = s), 0) then
      return jsonb_build_object('verdict', 'superseded', 'failure_count', 0);
    end if;
    perform a2_no_event(s, i);
  end if;
  if cur.processed_at is not null or cur.attempt_count <> attempt then
    return jsonb_build_object('verdict', 'superseded', 'failure_count', cur.failure_count);
  end if;
  if cur.failed_at is not null then
    return jsonb_build_object('verdict', 'dead_lettered', 'failure_count', cur.failure_count);
  end if;
  if cur.last_failed_attempt = attempt and cur.claim_holder is null then
    return jsonb_build_object('verdict', 'failed', 'failure_count', cur.failure_count);
  end if;
  if cur.claim_holder is null then
    return jsonb_build_object('verdict', 'superseded', 'failure_count', cur.failure_count);
  end if;
  failures := cur.failure_count + 1;
  dead := failures >= (p->>'max_failures')::bigint;
  update a2_events set
    failure_count = failures,
    last_error = p->>'error',
    last_failed_at = now_ms,
    last_failed_attempt = attempt,
    claim_holder = null,
    claim_expires_at = null,
    failed_at = case when dead then now_ms end
   where session_id = s and idx = i;
  if dead then
    perform a2_release_pins(s, i);
    return jsonb_build_object('verdict', 'dead_lettered', 'failure_count', failures);
  end if;
  return jsonb_build_object('verdict', 'failed', 'failure_count', failures);
end $$;

-- redrive. p: {s, index, action: retry|skip, now}. Returns {redriven, has_pending}.
create or replace function a2_redrive(p jsonb) returns jsonb
language plpgsql as $$
declare
  s text := p->>'s';
  i bigint := (p->>'index')::bigint;
  is_skip boolean := p->>'action' = 'skip';
  dead record;
  is_dead boolean;
begin
  -- Lane promotion must see every append that committed before it, so a skip takes the session
  -- lock first, in append's order. The row lock serializes both actions with claims.
  if is_skip then
    perform pg_advisory_xact_lock(hashtext(s));
  end if;
  select lane into dead from a2_events
   where session_id = s and idx = i
     and idx > coalesce((select clear_index from a2_clears where session_id = s), 0)
     and processed_at is null
     and failed_at is not null
   for update;
  is_dead := found;
  if is_dead and not is_skip then
    update a2_events set failed_at = null, failure_count = 0 where session_id = s and idx = i;
  elsif is_dead then
    update a2_events set processed_at = (p->>'now')::bigint, lane_ready = false
     where session_id = s and idx = i;
    if dead.lane is not null then
      perform a2_lane_handoff(s, dead.lane,
        coalesce((select clear_index from a2_clears where session_id = s), 0));
    end if;
  end if;
  -- "Is anything pending": the ordered first entry of a2_events_pending (see the header).
  return jsonb_build_object('redriven', is_dead, 'has_pending', (
    select idx from a2_events
     where session_id = s and processed_at is null
       and idx > coalesce((select clear_index from a2_clears where session_id = s), 0)
     order by idx limit 1) is not null);
end $$;

-- put_snapshots. p: {s, reducer, now, writes: [{index, state, pins: [idx...]}]} (one write per
-- index, ascending). Returns null.
create or replace function a2_put_snapshots(p jsonb) returns jsonb
language plpgsql as $$
declare
  s text := p->>'s';
  reducer text := p->>'reducer';
  now_ms bigint := (p->>'now')::bigint;
  ci bigint;
  head_index bigint;
  writes jsonb;
  latest jsonb;
  latest_index bigint;
  final_head bigint;
  advances boolean;
  w jsonb;
  w_index bigint;
begin
  -- The two-key lock does not conflict with the session lock.
  perform pg_advisory_xact_lock(hashtext(s), hashtext(reducer));
  select boundary.clear_index, head.up_to_index into ci, head_index
    from (select coalesce((select clear_index from a2_clears where session_id = s), 0)
            as clear_index) boundary
    left join lateral (
      select up_to_index from a2_snapshots
       where session_id = s and reducer_name = reducer
       for update
    ) head on true;
  -- A fold from before the latest clear describes a lifetime that is gone.
  select coalesce(jsonb_agg(x order by (x->>'index')::bigint), '[]') into writes
    from jsonb_array_elements(p->'writes') x
   where (x->>'index')::bigint >= ci;
  if jsonb_array_length(writes) = 0 then
    return null;
  end if;
  if head_index < ci then
    head_index := null;  -- A stale head counts as absent.
  end if;

  -- Pins on unfinished events of this lifetime; the event rows are locked, serializing with
  -- completions and dead-lettering that release pins.
  with requested as (
    select (x->>'index')::bigint as up_to_index, pin::bigint as event_index
      from jsonb_array_elements(writes) x, jsonb_array_elements_text(x->'pins') pin
  ), events as materialized (
    select idx from a2_events
     where session_id = s
       and idx in (select event_index from requested)
       and idx > ci
       and processed_at is null
       and failed_at is null
     order by idx
     for update
  )
  insert into a2_snapshot_pins (session_id, reducer_name, up_to_index, event_index)
  select distinct s, reducer, requested.up_to_index, requested.event_index
    from requested join events on events.idx = requested.event_index
  on conflict do nothing;

  latest := writes->(jsonb_array_length(writes) - 1);
  latest_index := (latest->>'index')::bigint;
  advances := head_index is null or latest_index > head_index;
  final_head := case when advances then latest_index else head_index end;

  if advances and head_index is not null and exists(
       select 1 from a2_snapshot_pins
        where session_id = s and reducer_name = reducer and up_to_index = head_index) then
    insert into a2_snapshot_history (session_id, reducer_name, up_to_index, state, updated_at)
    select session_id, reducer_name, up_to_index, state, updated_at from a2_snapshots
     where session_id = s and reducer_name = reducer
    on conflict (session_id, reducer_name, up_to_index)
      do update set state = excluded.state, updated_at = excluded.updated_at;
  end if;

  for w in select x from jsonb_array_elements(writes) x loop
    w_index := (w->>'index')::bigint;
    continue when w_index >= final_head;
    if exists(select 1 from a2_snapshot_pins
               where session_id = s and reducer_name = reducer and up_to_index = w_index) then
      insert into a2_snapshot_history (session_id, reducer_name, up_to_index, state, updated_at)
      values (s, reducer, w_index, w->'state', now_ms)
      on conflict (session_id, reducer_name, up_to_index)
        do update set state = excluded.state, updated_at = excluded.updated_at;
    else
      delete from a2_snapshot_history
       where session_id = s and reducer_name = reducer and up_to_index = w_index;
    end if;
  end loop;

  if head_index is null or latest_index >= head_index then
    insert into a2_snapshots (session_id, reducer_name, up_to_index, state, updated_at)
    values (s, reducer, latest_index, latest->'state', now_ms)
    on conflict (session_id, reducer_name)
      do update set up_to_index = excluded.up_to_index, state = excluded.state,
                    updated_at = excluded.updated_at;
  end if;
  return null;
end $$;

-- clear. p: {s, now, if_last|null, cause: {index, attempt}|null, marker_id, marker_type}
-- marker_type is the store's clear_event_type option (absent: 'a2.clear'), the one setting that
-- must match the TypeScript services sharing the database.
-- Returns {cleared, index, clear_index}.
create or replace function a2_clear(p jsonb) returns jsonb
language plpgsql as $$
declare
  s text := p->>'s';
  now_ms bigint := (p->>'now')::bigint;
  if_last bigint := (p->>'if_last')::bigint;
  has_cause boolean := p->'cause' is not null and jsonb_typeof(p->'cause') <> 'null';
  cause_index bigint := (p->'cause'->>'index')::bigint;
  cause_attempt bigint := (p->'cause'->>'attempt')::bigint;
  marker_id text := p->>'marker_id';
  marker_type text := coalesce(p->>'marker_type', 'a2.clear');
  head bigint;
  ci bigint;
  marker bigint;
  parent record;
  v_constraint text;
begin
  perform pg_advisory_xact_lock(hashtext(s));
  select coalesce((select idx from a2_events where session_id = s order by idx desc limit 1), 0),
         coalesce((select clear_index from a2_clears where session_id = s), 0)
    into head, ci;
  -- Causes come before idempotency (Q15).
  if has_cause then
    if cause_index <= ci then
      perform a2_superseded(s, cause_index, cause_attempt);
    end if;
    select attempt_count, failed_at into parent from a2_events
     where session_id = s and idx = cause_index for update;
    if not found then
      perform a2_no_event(s, cause_index);
    end if;
    if parent.attempt_count <> cause_attempt or parent.failed_at is not null then
      perform a2_superseded(s, cause_index, cause_attempt);
    end if;
  end if;
  if if_last is not null and ci = if_last + 1 then
    return jsonb_build_object('cleared', true, 'index', head, 'clear_index', ci);
  end if;
  if if_last is not null and if_last <> head then
    return jsonb_build_object('cleared', false, 'index', head, 'clear_index', ci);
  end if;
  if head = 0 or ci = head then
    return jsonb_build_object('cleared', true, 'index', head, 'clear_index', ci);
  end if;
  marker := head + 1;
  begin
    insert into a2_events (session_id, idx, event_id, event_type, payload, created_at, cause,
                           lane, lane_ready, processed_at)
    values (s, marker, marker_id, marker_type, 'null'::jsonb, now_ms, null, null,
            true, now_ms);
  exception when unique_violation then
    get stacked diagnostics v_constraint = constraint_name;
    if v_constraint = 'a2_events_event_id_key' then
      -- Q14: any row holding the id blocks the marker, even a stale one of this session.
      raise exception using errcode = 'A2003',
        message = format('the clear marker id ''%s'' already exists', marker_id);
    end if;
    raise;
  end;
  -- Releasing a clearing handler's claim makes a claim waiting on its row skip it once this
  -- commits, instead of re-running the handler.
  if has_cause then
    update a2_events set lane_ready = false, claim_holder = null, claim_expires_at = null
     where session_id = s and idx = cause_index;
  end if;
  insert into a2_clears (session_id, clear_index) values (s, marker)
  on conflict (session_id) do update set clear_index = excluded.clear_index;
  perform pg_notify('a2_events', case when octet_length(s) < 8000 then s else md5(s) end);
  return jsonb_build_object('cleared', true, 'index', marker, 'clear_index', marker);
end $$;

-- reclaim. p: {s, batch}. Returns {deleted, done}. Rows other work holds are skipped, never
-- waited on, so deletion cannot join a deadlock; a later call takes them.
create or replace function a2_reclaim(p jsonb) returns jsonb
language plpgsql as $$
declare
  s text := p->>'s';
  ci bigint;
  deleted bigint;
  skipped bigint;
begin
  with boundary as materialized (
    select coalesce((select clear_index from a2_clears where session_id = s), 0) as clear_index
  ), batch as materialized (
    select ctid as row_id from a2_events
     where session_id = s and idx < (select clear_index from boundary)
     order by idx
     limit (p->>'batch')::integer
     for update skip locked
  ), gone as (
    delete from a2_events event where event.ctid = any(array(select row_id from batch))
    returning event.idx
  ), pins as (
    delete from a2_snapshot_pins pin
     where pin.session_id = s and pin.event_index = any(array(select idx from gone))
  )
  select (select count(*) from gone), (select clear_index from boundary) into deleted, ci;
  if ci = 0 then
    return jsonb_build_object('deleted', 0, 'done', true);
  end if;
  if deleted > 0 then
    return jsonb_build_object('deleted', deleted, 'done', false);
  end if;
  if (select idx from a2_events where session_id = s and idx < ci order by idx limit 1)
     is not null then
    return jsonb_build_object('deleted', 0, 'done', false);
  end if;
  with pins as materialized (
    select ctid from a2_snapshot_pins
     where session_id = s and up_to_index < ci
     for update skip locked
  ), history as materialized (
    select ctid from a2_snapshot_history
     where session_id = s and up_to_index < ci
     for update skip locked
  ), heads as materialized (
    select ctid from a2_snapshots
     where session_id = s and up_to_index < ci
     for update skip locked
  ), gone_pins as (
    delete from a2_snapshot_pins target where target.ctid = any(array(select ctid from pins))
  ), gone_history as (
    delete from a2_snapshot_history target
     where target.ctid = any(array(select ctid from history))
  ), gone_heads as (
    delete from a2_snapshots target where target.ctid = any(array(select ctid from heads))
  )
  select (select count(*) from a2_snapshot_pins where session_id = s and up_to_index < ci)
       + (select count(*) from a2_snapshot_history where session_id = s and up_to_index < ci)
       + (select count(*) from a2_snapshots where session_id = s and up_to_index < ci)
       - (select count(*) from pins)
       - (select count(*) from history)
       - (select count(*) from heads)
    into skipped;
  return jsonb_build_object('deleted', 0, 'done', skipped = 0);
end $$;

-- patch_presence. p: {s, participant, state, ttl, now, source|null}. Returns the live map.
create or replace function a2_patch_presence(p jsonb) returns jsonb
language plpgsql as $$
declare
  s text := p->>'s';
  now_ms bigint := (p->>'now')::bigint;
begin
  delete from a2_presence where ns = s and expires_at <= now_ms;
  if p->'state' is null or jsonb_typeof(p->'state') = 'null' then
    delete from a2_presence where ns = s and participant = p->>'participant';
  else
    insert into a2_presence (ns, participant, state, source, expires_at)
    values (s, p->>'participant', p->'state', p->>'source', now_ms + (p->>'ttl')::bigint)
    on conflict (ns, participant) do update
      set state = excluded.state, source = excluded.source, expires_at = excluded.expires_at;
  end if;
  return coalesce((select jsonb_object_agg(participant, state) from a2_presence
                    where ns = s and expires_at > now_ms), '{}'::jsonb);
end $$;
