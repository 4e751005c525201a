-- SPDX-License-Identifier: MIT
-- The a2 Postgres schema (docs/postgres-layout.md): tables of experimental-a2 0.18.0 and one
-- server-side function per write operation. Idempotent: applied by open() on every start, in the
-- schema named by Options::schema (the connection's search_path), under an advisory lock.
--
-- Every write function takes typed arguments (text, bigint, arrays for batches, jsonb for
-- payloads and states) and returns one row of typed out-parameters (r_*); rows of a2_events come
-- back as an a2_events[] that the statement sql/<op>.sql unnests into the columns every reader
-- decodes (docs/postgres-layout.md#calling-convention). Each write operation is one round trip in
-- autocommit. Inside a plpgsql function every statement takes a fresh snapshot
-- (READ COMMITTED), so a boundary read by a statement that starts after the session lock sees
-- every clear that committed while the lock was awaited
-- (docs/postgres-layout.md#reading-the-boundary).
--
-- Why one file of ~1,100 lines: open() applies it as one idempotent script under one advisory
-- lock, so tables, indexes, shared helpers and the functions that call them are created in one
-- order that is checked by applying it; each function's caller is src/postgres/calls/<op>.hpp
-- and its statement sql/<op>.sql.
--
-- Cost rules (Postgres 15; every write is on the hot path):
-- - Helpers are plpgsql, never `language sql`: a SQL function that cannot be inlined (one with a
--   subquery, a CTE or a DML statement) is parsed and planned again on every call, while
--   plpgsql keeps each statement's plan for the life of the connection. The exception is a
--   function whose body is one expression over its arguments (a2_notify, a2_notify_work): the
--   planner inlines it into the calling statement, whose plan is kept, and there is no call.
-- - The session lock is taken by assignment, `locked := a2_lock_session(s)`, an expression
--   plpgsql inlines, not by `perform pg_advisory_xact_lock(...)`, a statement (below).
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
-- - a2's connections run with plan_cache_mode = force_generic_plan and with enable_seqscan and
--   enable_bitmapscan off (their set-up, src/postgres/connection_pool.hpp kPlannerSettings), so
--   plpgsql plans each statement once per connection instead of again on every call (custom
--   plans that look cheaper than the generic one), and those generic plans, made from the
--   statistics of the first call, are index and TID scans whatever those were. Not function SET
--   clauses, which cost a claim about 24 µs and a completion about 16 µs of server time
--   (docs/postgres-layout.md#plans).
-- - a2_events has room on its pages for HOT claims (fillfactor, below).
--
-- Contract errors are raised with these SQLSTATEs and a DETAIL that is a JSON object naming the
-- error's facts (the C++ side words the message, src/postgres/errors.cpp):
--   A2001 invalid argument: no event at an index      {"session", "index"}
--   A2002 store unavailable: a reused id still held by cleared work   {"session"}
--   A2003 partial duplicate batch                     {"kind", ...} (see a2_duplicate)
--   A2004 superseded attempt                          {"session", "index", "attempt"}
--   A2005 session cleared                             {"session", "origin"}

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
  available_at         bigint,
  primary key (session_id, idx),
  constraint a2_events_event_id_key unique (event_id)
);

-- Schema version 2 (docs/postgres-layout.md#schema-version-2): available_at, the time before
-- which an event is not claimable (delayed work, an a2 extension). A version-1 table gets the
-- column in place, nullable and without default, so no row is rewritten and the original
-- package's statements, which name their columns, keep working. Looked up first: ALTER TABLE
-- takes an exclusive lock on a2_events even when the column exists, and open() runs this on
-- every start.
do $$
begin
  if not exists (select 1 from pg_attribute
                  where attrelid = 'a2_events'::regclass and attname = 'available_at'
                    and not attisdropped) then
    alter table a2_events add column available_at bigint;
  end if;
end $$;

-- Room on every page for the claim's new row versions (docs/postgres-layout.md#fillfactor): a
-- claim changes no indexed column, so with room on the row's page its update is a HOT update,
-- which writes no index entry; without room every claimed row costs an entry in each of the
-- four indexes, about ten times the HOT update (a claim of 5,000 events: ~30 ms instead of
-- ~150 ms). 45: a claim of every row of a page (a large claim) still finds room for all the new
-- versions, each some 30 bytes longer than the old one (the claim columns are no longer null).
-- A storage parameter only: no column changes, pages written before keep their fill, and the
-- original package reads and writes the table as before. Set only when the table has no
-- fillfactor yet, so an operator's own setting stands; looked up first, as above.
do $$
begin
  if not exists (select 1 from pg_class c cross join unnest(c.reloptions) option
                  where c.oid = 'a2_events'::regclass and option like 'fillfactor=%') then
    alter table a2_events set (fillfactor = 45);
  end if;
end $$;

-- Claims, has_pending, dead letters, held claims: only unfinished rows, so cost follows pending
-- work.
create index if not exists a2_events_pending
  on a2_events (session_id, idx) where processed_at is null;
-- lane_ready on insert and the lane handoff. Rows with a lane only: every statement that reads it
-- names a lane (`lane = ...`, which implies the predicate), so an event without one, the common
-- case, is not inserted into it. A schema set up by an earlier build keeps its index without
-- `lane is not null` (create if not exists; docs/postgres-layout.md#indexes says how to replace it
-- without blocking writes).
create index if not exists a2_events_pending_lane
  on a2_events (session_id, lane, idx) where processed_at is null and lane is not null;

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

-- The work index (an a2 extension, docs/postgres-layout.md#a2_work): at most one row per
-- session, next_at the time from which the session may have claimable work. Kept by a2's write
-- functions (each with at most one statement), paged by find_work.sql in (next_at, session_id
-- bytewise) order, repaired by a2_sweep_work for rows the original package wrote. The original
-- package neither reads nor writes it. Additive: it stays schema version 2.
create table if not exists a2_work (
  session_id text   primary key,
  next_at    bigint not null
);
create index if not exists a2_work_due on a2_work (next_at, session_id collate "C");

-- One row per schema version applied to this data: a version-1 schema migrated in place keeps
-- its row 1 and gets 2. open() requires max(version) = 2 (src/postgres/postgres_store.cpp).
insert into a2_schema_version (version) values (2) on conflict (version) do nothing;

-- The signatures of earlier versions of a2, which took one jsonb request document and returned
-- jsonb. Dropped so that no caller reaches an old body; a no-op once they are gone.
drop function if exists a2_append(jsonb);
drop function if exists a2_claim_available(jsonb);
drop function if exists a2_renew_claims(jsonb);
drop function if exists a2_complete_attempt(jsonb);
drop function if exists a2_fail_attempt(jsonb);
drop function if exists a2_redrive(jsonb);
drop function if exists a2_put_snapshots(jsonb);
drop function if exists a2_clear(jsonb);
drop function if exists a2_reclaim(jsonb);
drop function if exists a2_patch_presence(jsonb);
drop function if exists a2_insert_batch(text, bigint, bigint, bigint, jsonb, jsonb);
-- Schema version 1's signatures of the functions that schema version 2 gave an argument
-- (available_at, max_events, retry_at): `create or replace` of the new signature would add an
-- overload beside them, so they are dropped; a no-op once they are gone.
drop function if exists a2_insert_batch(text, bigint, bigint, bigint, text[], text[], jsonb,
                                        bigint[], bigint[], text[], boolean[], jsonb);
drop function if exists a2_append(text, bigint, bigint, text[], text[], jsonb, bigint[],
                                  bigint[], text[], boolean[]);
drop function if exists a2_claim_available(text, text, bigint, bigint, bigint[]);
drop function if exists a2_complete_attempt(text, bigint, bigint, bigint, text[], text[], jsonb,
                                            text[], boolean[]);
drop function if exists a2_fail_attempt(text, bigint, bigint, text, bigint, bigint);
-- a2_complete_one before its apply_work (the work index applied by the completion itself).
drop function if exists a2_complete_one(text, bigint, bigint, bigint, text[], text[], jsonb,
                                        text[], boolean[], bigint[]);
-- The same for the signature of a2_release_claims before its available_at (a snooze), which
-- earlier builds of schema version 2 created (docs/postgres-layout.md#schema-version-2).
drop function if exists a2_release_claims(text, text, bigint, bigint[], bigint[]);
-- a2_wake (plpgsql, returning void) became a2_owe_wake (one SQL expression returning the flags):
-- the write functions below call the new one, so the old helper goes (a no-op once it is gone;
-- an earlier a2 that applies its own schema.sql creates it again with the bodies that call it).
drop function if exists a2_wake(text, boolean, boolean);
-- a2_work_may_raise (a claim's try of the session lock before it raised or removed its entry)
-- went when every write came to take the session lock first: a claim always holds it.
drop function if exists a2_work_may_raise(text);
-- a2_work_set gained `stopped` (a claim that took max_events rows), so that a claim group writes
-- every claim's work index entry with one call each (a2_claim_group).
drop function if exists a2_work_set(text, bigint, bigint);
-- a2_append_one kept its arguments but returned jsonb (its return type cannot be replaced).
do $$
begin
  if (select prorettype from pg_proc
       where oid = to_regprocedure('a2_append_one(text, bigint, text, text, jsonb)'))
     = 'jsonb'::regtype then
    drop function a2_append_one(text, bigint, text, text, jsonb);
  end if;
end $$;

-- The session's latest clear marker, or 0. Read it in a statement that starts after the
-- operation's lock (see the header). The functions and statements of a2 inline its body (see
-- the cost rules above); it stays for compatibility.
create or replace function a2_clear_index_of(s text) returns bigint
language sql stable as $$
  select coalesce((select clear_index from a2_clears where session_id = s), 0)
$$;

-- The counts of session s at now_ms (docs/semantics.md#session-counts), for list_sessions.sql and
-- inspect_session.sql (an a2 addition; read-only). The head is the last primary-key entry; the
-- rest reads only the unfinished rows above the boundary (the partial index a2_events_pending),
-- so its cost follows unfinished work. A dead letter is counted dead and still heads its lane.
create or replace function a2_session_counts(s text, now_ms bigint, out r_head bigint,
                                             out r_clear_index bigint, out r_pending bigint,
                                             out r_ready bigint, out r_claimed bigint,
                                             out r_dead bigint)
language plpgsql stable as $$
begin
  r_head := coalesce((select e.idx from a2_events e where e.session_id = s
                       order by e.idx desc limit 1), 0);
  r_clear_index := coalesce((select c.clear_index from a2_clears c where c.session_id = s), 0);
  select count(*) filter (where p.failed_at is null),
         count(*) filter (where p.failed_at is null and coalesce(p.claim_expires_at, 0) <= now_ms
                            and coalesce(p.available_at, 0) <= now_ms and p.lane_head),
         count(*) filter (where p.failed_at is null and coalesce(p.claim_expires_at, 0) > now_ms),
         count(*) filter (where p.failed_at is not null)
    into r_pending, r_ready, r_claimed, r_dead
    from (select e.failed_at, e.claim_expires_at, e.available_at,
                 nullif(e.lane, '') is null
                   or e.idx = min(e.idx) over (partition by nullif(e.lane, '')) as lane_head
            from a2_events e
           where e.session_id = s and e.processed_at is null and e.idx > r_clear_index) p;
end $$;

-- The wake-ups (docs/postgres-layout.md#notifications-and-feeds), the one place of their
-- channels and payloads. a2_notify(s) wakes the live feeds of session s: channel a2_events,
-- payload s, or md5(s) when s is 8000 bytes or longer (NOTIFY payloads are limited).
-- a2_notify_work(s) is the work signal of s: channel a2_work, payload s, or '' (no session) when
-- s is that long. Either is sent at commit (once per transaction, channel and payload). They are
-- called by a2_owe_wake below, and by the store's notifier (sql/send_wakes.sql) after commit. Both
-- are one SQL expression: the planner inlines them into the statement that calls them, which
-- costs a notifier round less than half of a PL/pgSQL call per session it notifies.
create or replace function a2_notify(s text) returns void
language sql volatile as $$
  select pg_notify('a2_events', case when octet_length(s) < 8000 then s else md5(s) end)
$$;

create or replace function a2_notify_work(s text) returns void
language sql volatile as $$
  select pg_notify('a2_work', case when octet_length(s) < 8000 then s else '' end)
$$;

-- The wake-ups of a write of session s sent inside its transaction: a2_owe_wake's branch for a
-- connection that does not set a2.wake_after_commit. PL/pgSQL, so that the expression of
-- a2_owe_wake stays small (below).
create or replace function a2_notify_in_transaction(s text, events boolean, work boolean)
returns text language plpgsql volatile as $$
begin
  return concat(case when events then a2_notify(s)::text end,
                case when work then a2_notify_work(s)::text end);
end $$;

-- The wake-ups of a write of session s: its feeds (events) and its work signal (work). Every
-- write function calls it where it changed what they announce, as an assignment
-- (`owed := a2_owe_wake(...)`). A connection of this a2 sets a2.wake_after_commit = on: then no
-- NOTIFY is sent in the transaction (a NOTIFY serializes every commit of the database); the
-- flags are or-ed into the transaction-local setting a2.wake (1 events, 2 work), which the
-- write's statement returns as r_wake, and the store's notifier sends them after commit
-- (src/postgres/wake_sender.cpp). Any other connection (an earlier a2 sharing the schema) gets
-- the NOTIFYs in its transaction, as before. Returns the flags set ('' when it notified). One SQL
-- expression, like a2_notify: plpgsql inlines it into the caller's assignment, which costs an
-- append about 3.6 µs of ~50 less than the call of a plpgsql helper (pgbench, 10 alternating
-- pairs). PL/pgSQL prepares that expression again in every transaction, each node of it, the
-- branch not taken too: with a2_notify and a2_notify_work inlined into it as well it cost an
-- append about 9 µs of ~50, so the branch that notifies calls a2_notify_in_transaction
-- (docs/postgres-layout.md#notifications-and-feeds). Both flags at once (an append) need no
-- read of the old ones.
create or replace function a2_owe_wake(s text, events boolean, work boolean) returns text
language sql volatile as $$
  select case
    when current_setting('a2.wake_after_commit', true) is distinct from 'on' then
      a2_notify_in_transaction(s, events, work)
    when events and work then set_config('a2.wake', '3', true)
    else set_config('a2.wake',
                    (coalesce(nullif(current_setting('a2.wake', true), '')::integer, 0)
                     | case when events then 1 else 0 end
                     | case when work then 2 else 0 end)::text, true)
  end
$$;

-- The session lock: the transaction-level advisory lock on hashtext(s) that serializes the
-- writes of session s (docs/postgres-layout.md#locking). Taken by assignment,
-- `locked := a2_lock_session(s)`: one SQL expression, which plpgsql inlines into the caller's
-- assignment and evaluates without a statement of its own, where `perform
-- pg_advisory_xact_lock(...)` is a statement with its executor start (about 1.5-2 µs more per
-- lock: 100,000 calls of a plpgsql function doing either, one transaction, three rounds).
-- Always true.
create or replace function a2_lock_session(s text) returns boolean
language sql volatile as $$
  select pg_advisory_xact_lock(hashtext(s)) is not null
$$;

create or replace function a2_superseded(s text, cause_index bigint, cause_attempt bigint)
returns void language plpgsql as $$
begin
  raise exception using errcode = 'A2004',
    message = format('attempt %s no longer owns event %s in session ''%s''',
                     cause_attempt, cause_index, s),
    detail = jsonb_build_object('session', s, 'index', cause_index,
                                'attempt', cause_attempt)::text;
end $$;

create or replace function a2_no_event(s text, i bigint) returns void
language plpgsql as $$
begin
  raise exception using errcode = 'A2001',
    message = format('no event at index %s in session ''%s''', i, s),
    detail = jsonb_build_object('session', s, 'index', i)::text;
end $$;

-- Raises partial_duplicate_batch. kind and facts (the DETAIL, with "kind" added):
--   id_owned_elsewhere {id}   some_ids_stored {session, stored, total}   replay_mismatch {session}
--   completion_mismatch {session, index, attempt}   child_id_taken {session, index, id}
--   marker_id_taken {id}
create or replace function a2_duplicate(kind text, facts jsonb, message text) returns void
language plpgsql as $$
begin
  raise exception using errcode = 'A2003', message = message,
    detail = (jsonb_build_object('kind', kind) || facts)::text;
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
        message = format('an event id being reused is still held by cleared work in session ''%s''', s),
        detail = jsonb_build_object('session', s)::text;
    end if;
  end if;
  return query select * from a2_events where event_id = any(ids) order by idx;
end $$;

-- Inserts a batch at base+1.. (one statement). A laned unsettled event is ready unless an
-- unfinished event of its lane in this lifetime precedes it (earlier batch members count).
-- The batch is parallel arrays (new_payloads a jsonb array); causes are the arrays' or, for
-- children, parent_cause. new_available_at (null, or null elements: none) is stored only when
-- after now_ms (a time not after now means at once). Returns the new rows in index order.
create or replace function a2_insert_batch(s text, base bigint, ci bigint, now_ms bigint,
                                           new_ids text[], new_types text[], new_payloads jsonb,
                                           new_cause_indexes bigint[],
                                           new_cause_attempts bigint[], new_lanes text[],
                                           new_settled boolean[], new_available_at bigint[],
                                           parent_cause jsonb)
returns a2_events[] language plpgsql
-- Generic plans, index and TID scans only (a2's connections' planner settings, above): the
-- one-event insert was planned again on every call without them.
as $$
declare
  inserted_rows a2_events[];
  one_row a2_events;
begin
  if cardinality(new_ids) = 1 then
    -- One event (the common case): no ranking; the same columns as the batch statement below.
    insert into a2_events as ins (session_id, idx, event_id, event_type, payload, created_at,
                                  cause, lane, lane_ready, processed_at, available_at)
    values (s, base + 1, new_ids[1], new_types[1],
            coalesce(new_payloads->0, 'null'::jsonb), now_ms,
            coalesce(parent_cause,
                     case when new_cause_indexes[1] is not null then
                       jsonb_build_object('index', new_cause_indexes[1],
                                          'attempt', new_cause_attempts[1]) end),
            new_lanes[1],
            new_lanes[1] is null or (
              select pending.idx from a2_events pending
               where pending.session_id = s and pending.lane = new_lanes[1]
                 and pending.processed_at is null and pending.idx > ci
               order by pending.idx limit 1
            ) is null,
            case when coalesce(new_settled[1], false) then now_ms end,
            case when new_available_at[1] > now_ms then new_available_at[1] end)
    returning ins.* into one_row;
    return array[one_row];
  end if;
  with input as (
    select t.ord, t.event_id, t.event_type,
           coalesce(new_payloads->(t.ord::integer - 1), 'null'::jsonb) as payload,
           coalesce(parent_cause,
                    case when t.cause_index is not null then
                      jsonb_build_object('index', t.cause_index,
                                         'attempt', t.cause_attempt) end) as cause,
           t.lane,
           coalesce(t.settled, false) as settled,
           case when t.available_at > now_ms then t.available_at end as available_at
      from unnest(new_ids, new_types, new_cause_indexes, new_cause_attempts, new_lanes,
                  new_settled, new_available_at)
           with ordinality as t(event_id, event_type, cause_index, cause_attempt, lane, settled,
                                available_at, ord)
  ), ranked as (
    select input.*,
           count(*) filter (where not settled) over (
             partition by lane order by ord rows between unbounded preceding and 1 preceding
           ) as earlier_unsettled
      from input
  ), inserted as (
    insert into a2_events as ins (session_id, idx, event_id, event_type, payload, created_at,
                                  cause, lane, lane_ready, processed_at, available_at)
    select s, base + ord, event_id, event_type, payload, now_ms, cause, lane,
           lane is null or (
             earlier_unsettled = 0 and (
               select pending.idx from a2_events pending
                where pending.session_id = s and pending.lane = ranked.lane
                  and pending.processed_at is null and pending.idx > ci
                order by pending.idx limit 1
             ) is null
           ),
           case when settled then now_ms end,
           available_at
      from ranked
    returning ins as row_value
  )
  select coalesce(array_agg(inserted.row_value order by (inserted.row_value).idx), '{}')
    into inserted_rows
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

-- Hands lane `l` to its lowest unfinished event of the current lifetime; true when there was one
-- (the work index's "handed a lane to its next pending event").
create or replace function a2_lane_pass(s text, l text, ci bigint) returns boolean
language plpgsql as $$
declare
  handed boolean;
begin
  update a2_events set lane_ready = true
   where session_id = s
     and idx = (
       select idx from a2_events
        where session_id = s and lane = l and processed_at is null and idx > ci
        order by idx limit 1
     )
  returning true into handed;
  return coalesce(handed, false);
end $$;

-- a2_lane_pass without its answer.
create or replace function a2_lane_handoff(s text, l text, ci bigint) returns void
language plpgsql as $$
begin
  perform a2_lane_pass(s, l, ci);
end $$;

-- The rows of a2_events as one JSON text: an array with one array per row, the stored-event
-- columns of src/postgres/rows.hpp in their order (payload, cause and returned_event_ids as
-- their text, so the client parses them as it parses those columns). The statements of the
-- one-event appends (append_one, append_group) return a replay's rows so, in one column
-- r_rows, instead of unnesting them into 22 columns that every fresh append would carry empty:
-- libpq describes a statement's result columns on every call, so each column costs every call
-- (docs/postgres-layout.md#calling-convention). Strict: null (no rows) without running.
create or replace function a2_events_json(rows a2_events[]) returns text
language sql immutable strict as $$
  select json_agg(json_build_array(
           e.session_id, e.idx, e.event_id, e.event_type, e.payload::text, e.created_at,
           e.cause::text, e.lane, e.processed_at, e.processed_by_attempt,
           e.returned_event_ids::text, e.first_claimed_at, e.last_claimed_at, e.attempt_count,
           e.claim_holder, e.claim_expires_at, e.failure_count, e.last_failed_at,
           e.last_failed_attempt, e.last_error, e.failed_at, e.available_at)
           order by e.ordinality)::text
    from unnest(rows) with ordinality e
$$;

-- append, the common case: one unsettled event without cause, lane or origin, for a connection
-- that reads the wake-ups from the reply (a2.wake_by_reply, this a2's: append_one.sql calls it,
-- a2_append_group's set path is its rule for many requests; a2_append_one below is the same for
-- any connection). Its only possible verdicts are ok and, when a row already holds the id,
-- replay or foreign, so one statement after the session lock does it: the head, the insert, and
-- the id check as a probe of the id index that makes it insert nothing when a committed row
-- holds the id. A row being inserted by another transaction is not seen by the probe: the
-- insert waits for it and, when it commits, fails (unique violation of a2_events_event_id_key),
-- which the caller answers by calling again (src/postgres/calls/append_one.hpp; the probe then
-- sees the row). Not `on conflict (event_id) do nothing`: its speculative insertion cost each
-- append one WAL record more (5.02 against 4.01 per call, 534-562 WAL bytes against 442) and
-- server time (medians 73.7 and 73.5 µs against 45.2 and 60.7: pgbench at one client, two sets
-- of eight alternating 2 s runs). Returns the new event's index in r_index (r_events null):
-- the event is pending work, so the caller knows has_pending and every column of the row
-- without reading it back, and that it owes both wake-ups (a2_append_wake).
-- check_id false skips the probe: the caller's store drew the id from its IdSource, so no row
-- holds it unless that source repeats itself, and the insert's unique index checks it anyway;
-- a stored id then fails the insert (unique violation) and the caller calls again with check_id
-- true, which answers as above. The probe cost each append about 2 µs of server time and 3 of
-- its 18 buffer hits (docs/postgres-layout.md#check-id).
-- When the id is taken it returns what a2_append returns for the same request (r_index null;
-- replay, or the foreign id's error), in the same call and under the same lock (advisory locks
-- are re-entrant). It reads no setting: a2_append_one's test of a2.wake_by_reply cost each call
-- 3.4-4.5 µs of ~40 of server time (pgbench at 1 client, copies with and without it, two sets
-- of three alternating runs).
create or replace function a2_append_one_by_reply(s text, now_ms bigint, new_id text,
                                                  new_type text, new_payload jsonb,
                                                  check_id boolean,
                                                  out r_index bigint, out r_has_pending boolean,
                                                  out r_events a2_events[])
language plpgsql as $$
declare
  locked boolean;  -- a2_lock_session
  -- The session's entry in the work index is already at or before now_ms (null: no entry).
  due boolean;
begin
  locked := a2_lock_session(s);
  insert into a2_events (session_id, idx, event_id, event_type, payload, created_at)
  select s, coalesce((select head.idx from a2_events head where head.session_id = s
                       order by head.idx desc limit 1), 0) + 1,
         new_id, new_type, new_payload, now_ms
   -- An InitPlan, run only when check_id is true.
   where not check_id
      or not exists (select 1 from a2_events taken where taken.event_id = new_id)
  returning idx, (select w.next_at <= now_ms from a2_work w where w.session_id = s)
    into r_index, due;
  if r_index is null then
    select general.r_has_pending, general.r_events into r_has_pending, r_events
      from a2_append(s, now_ms, null, array[new_id], array[new_type],
                     jsonb_build_array(new_payload), array[null]::bigint[],
                     array[null]::bigint[], array[null]::text[], array[false],
                     array[null]::bigint[]) general;
    return;
  end if;
  r_has_pending := true;
  -- Work index: lower(E, now) (the event is unsettled and claimable at once), which is nothing
  -- to do when E is already at or before now. `due` was read in a snapshot taken after the
  -- session lock, and until this transaction commits nothing raises or removes E: a claim does
  -- that only while it holds the session lock (a2_work_set, a2_work_drop). The upsert locks the
  -- entry's row even when it changes nothing: skipping it gave appends at 16 clients 1-11% more
  -- calls/s, median 4% (docs/postgres-layout.md#a2_work).
  if due is not true then
    insert into a2_work as w (session_id, next_at) values (s, now_ms)
    on conflict (session_id) do update set next_at = excluded.next_at
     where excluded.next_at < w.next_at;
  end if;
end $$;

-- The five arguments of earlier a2s' append_one.sql (before check_id): the probe runs. Kept,
-- so that an earlier a2 sharing the schema during an upgrade keeps appending.
create or replace function a2_append_one_by_reply(s text, now_ms bigint, new_id text,
                                                  new_type text, new_payload jsonb,
                                                  out r_index bigint, out r_has_pending boolean,
                                                  out r_events a2_events[])
language plpgsql as $$
begin
  select one.r_index, one.r_has_pending, one.r_events into r_index, r_has_pending, r_events
    from a2_append_one_by_reply(s, now_ms, new_id, new_type, new_payload, true) one;
end $$;

-- a2_append_one_by_reply for any connection (an earlier a2's statements and a2_append_group's
-- loop call it): a new event also owes both wake-ups where such a connection finds them
-- (a2_owe_wake: NOTIFYs in the transaction, or a2.wake), unless the connection sets
-- a2.wake_by_reply.
create or replace function a2_append_one(s text, now_ms bigint, new_id text, new_type text,
                                         new_payload jsonb, out r_index bigint,
                                         out r_has_pending boolean, out r_events a2_events[])
language plpgsql as $$
declare
  owed text;
begin
  select one.r_index, one.r_has_pending, one.r_events into r_index, r_has_pending, r_events
    from a2_append_one_by_reply(s, now_ms, new_id, new_type, new_payload, true) one;
  if r_index is not null and current_setting('a2.wake_by_reply', true) is distinct from 'on' then
    owed := a2_owe_wake(s, true, true);
  end if;
end $$;

-- The wake-ups an a2_append_one call owes, as append_one.sql and a2_append_group return them
-- (r_wake): a new event (r_index set) owes both, which a2_append_one records in a2.wake only
-- for a connection without a2.wake_by_reply; a replay (r_index null) owes what a2_append
-- recorded there. The transaction-local setting costs an append of one event about 9% of its
-- rate at 16 clients (docs/postgres-layout.md#notifications-and-feeds).
create or replace function a2_append_wake(r_index bigint) returns text
language sql volatile as $$
  select case when r_index is not null then '3' else current_setting('a2.wake', true) end
$$;

-- Append groups: the requests of several callers of a2_append_one (each one unsettled event
-- without cause, lane or origin) in one call, so one transaction (src/postgres/write_groups.hpp,
-- docs/postgres-layout.md#write-groups). Parallel arrays in request order: sessions, the times of
-- the requests (now_ms of each), ids, types, payloads (a jsonb array). One row per request: k, its
-- position (1-based), what a2_append_one returns for it, and r_wake, its own wake-ups
-- (a2_append_wake). An error of any request rolls the whole group back; the store then sends each
-- request alone.
--
-- Two paths with one outcome: the group's rows and replies are those of a2_append_one called for
-- each request in session order (ties in request order), which tests compare column by column
-- (test/postgres/write_groups_test.cpp).
-- * The set path, when no request's id is stored yet and the connection takes its wake-ups by
--   reply (this a2's): the sessions' advisory locks in session order, then one INSERT of every
--   request's row (the index: the session's head, read after the locks, plus the request's rank
--   among the group's requests of its session), then one upsert of the sessions' a2_work entries
--   in session order, each lowered to its earliest request's time unless already at or before it.
--   It is a2_append_one_by_reply's rule (its insert and its work index lowering) as one
--   statement for all the requests: change the two together. Per request it costs the server
--   about 30% less than the loop below (pgbench, groups of 8 at 2 clients: 7.0-7.3k groups/s
--   against 4.9-5.4k). Two requests with one id, or an id another transaction stores meanwhile,
--   fail the INSERT (unique violation), so the group fails and each request goes alone.
-- * Otherwise (a replay among the requests; a connection without a2.wake_by_reply): each request
--   by a2_append_one in session order; a2.wake, when a request set it, is reset before the next.
-- Either way sessions are locked in the order a2_sweep_work locks their a2_work rows, and an
-- a2_work row only under its session's lock (a sweep takes none), so two groups, or a group and a
-- sweep, never wait for each other in a cycle.
-- check_ids false skips the set path's guard, as check_id does a2_append_one_by_reply's probe:
-- every request's id was drawn by the caller's store, and a stored one fails the INSERT, so the
-- group fails and each request goes alone.
create or replace function a2_append_group(ss text[], nows bigint[], new_ids text[],
                                           new_types text[], new_payloads jsonb,
                                           check_ids boolean,
                                           out k integer, out r_index bigint,
                                           out r_has_pending boolean, out r_wake text,
                                           out r_events a2_events[])
returns setof record
language plpgsql as $$
declare
  one record;
  cleared text;
begin
  -- The sessions' locks in session order (a2_lock_session, inlined into this query).
  perform a2_lock_session(u.s)
     from (select distinct x.s from unnest(ss) x(s) order by x.s) u;
  if current_setting('a2.wake_by_reply', true) = 'on' then
    -- The set path. Its guard is an InitPlan of the INSERT (one probe of the id index per
    -- request), run only when check_ids is true: with a replay among the requests it inserts
    -- nothing and returns no row.
    return query
    with req as (
      select u.o::integer as o, u.s, u.t, u.id, u.ty,
             row_number() over (partition by u.s order by u.o) as rank
        from unnest(ss, nows, new_ids, new_types) with ordinality as u(s, t, id, ty, o)
    ), ins as (
      insert into a2_events (session_id, idx, event_id, event_type, payload, created_at)
      select req.s, coalesce((select head.idx from a2_events head where head.session_id = req.s
                               order by head.idx desc limit 1), 0) + req.rank,
             req.id, req.ty, new_payloads -> (req.o - 1), req.t
        from req
       where not check_ids
          or not exists (select 1 from a2_events e where e.event_id = any(new_ids))
       order by req.s, req.o
      returning event_id, idx
    )
    select req.o, ins.idx, true, a2_append_wake(ins.idx), null::a2_events[]
      from req join ins on ins.event_id = req.id
     order by req.o;
    if found then
      insert into a2_work as w (session_id, next_at)
      select x.s, min(x.t) from unnest(ss, nows) x(s, t)
       where not exists (select 1 from a2_work due
                          where due.session_id = x.s and due.next_at <= x.t)
       group by x.s order by x.s
      on conflict (session_id) do update set next_at = excluded.next_at
       where excluded.next_at < w.next_at;
      return;
    end if;
  end if;
  for k in select u.o::integer from unnest(ss) with ordinality as u(s, o) order by u.s, u.o loop
    -- An assignment, not `select ... into ... from a2_append_one(...)`: no query (executor
    -- start, function scan) per request, about 3 µs of its ~45 less (pgbench, 6 pairs).
    one := a2_append_one(ss[k], nows[k], new_ids[k], new_types[k], new_payloads -> (k - 1));
    r_index := one.r_index;
    r_has_pending := one.r_has_pending;
    r_events := one.r_events;
    r_wake := a2_append_wake(one.r_index);
    if current_setting('a2.wake', true) <> '' then
      cleared := set_config('a2.wake', '', true);
    end if;
    return next;
  end loop;
end $$;

-- The five arguments of earlier a2s' append_group.sql (before check_ids): the guard runs. Kept,
-- as a2_append_one_by_reply's.
create or replace function a2_append_group(ss text[], nows bigint[], new_ids text[],
                                           new_types text[], new_payloads jsonb,
                                           out k integer, out r_index bigint,
                                           out r_has_pending boolean, out r_wake text,
                                           out r_events a2_events[])
returns setof record
language plpgsql as $$
begin
  return query select * from a2_append_group(ss, nows, new_ids, new_types, new_payloads, true);
end $$;

-- append. The batch is parallel arrays in batch order: ids, types, payloads (a jsonb array),
-- cause indexes and attempts (null: no cause), lanes (null: none), settled, available_at (null:
-- none; stored only when after now_ms). origin: the scheduled work's origin index or null.
-- Returns r_has_pending and the rows (new, or the replayed ones) in r_events. A replay does not
-- compare available_at (as it does not compare payloads).
create or replace function a2_append(s text, now_ms bigint, origin bigint, new_ids text[],
                                     new_types text[], new_payloads jsonb,
                                     new_cause_indexes bigint[], new_cause_attempts bigint[],
                                     new_lanes text[], new_settled boolean[],
                                     new_available_at bigint[],
                                     out r_has_pending boolean, out r_events a2_events[])
language plpgsql as $$
declare
  locked boolean;  -- a2_lock_session
  owed text;
  n integer := coalesce(cardinality(new_ids), 0);
  ids text[] := new_ids;
  base bigint;
  ci bigint;
  session_has_pending boolean;
  owners a2_events[] := '{}';
  one_id text;
  o a2_events;
  i integer;
  cause_index bigint;
  cause_attempt bigint;
  parent record;
begin
  if n = 0 then
    r_events := '{}';
    r_has_pending := (
      select idx from a2_events
       where session_id = s and processed_at is null
         and idx > coalesce((select clear_index from a2_clears where session_id = s), 0)
       order by idx limit 1) is not null;
    return;
  end if;
  -- Serialize appends per session: index assignment must not race across writers.
  locked := a2_lock_session(s);
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
          perform a2_duplicate('id_owned_elsewhere', jsonb_build_object('id', ids[i]),
            format('event id ''%s'' already belongs to another session', ids[i]));
        end if;
      end loop;
    end loop;
    if cardinality(owners) < n then
      perform a2_duplicate('some_ids_stored',
        jsonb_build_object('session', s, 'stored', cardinality(owners), 'total', n),
        format('%s of %s event ids of the batch already exist in session ''%s''',
               cardinality(owners), n, s));
    end if;
    -- Replay (Q6): n consecutive rows matching the request position by position.
    for i in 1 .. n loop
      o := owners[i];
      if o.idx <> owners[1].idx + i - 1 or o.event_id <> ids[i]
         or o.event_type <> new_types[i] or o.lane is distinct from new_lanes[i]
         or o.cause is distinct from (
              case when new_cause_indexes[i] is not null then
                jsonb_build_object('index', new_cause_indexes[i],
                                   'attempt', new_cause_attempts[i]) end) then
        perform a2_duplicate('replay_mismatch', jsonb_build_object('session', s),
          format('the batch does not match the events stored with its ids in session ''%s''', s));
      end if;
    end loop;
    r_events := array(select x from unnest(owners) x order by x.idx);
    r_has_pending := session_has_pending;
    return;
  end if;

  if origin is not null and origin <= ci then
    raise exception using errcode = 'A2005',
      message = format('scheduled work from event %s was cleared in session ''%s''', origin, s),
      detail = jsonb_build_object('session', s, 'origin', origin)::text;
  end if;

  -- Causes in batch order (Q9): boundary, range, then the attempt fence. The row lock
  -- serializes the fence with claims of the parent.
  for i in 1 .. n loop
    cause_index := new_cause_indexes[i];
    continue when cause_index is null;
    cause_attempt := new_cause_attempts[i];
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

  r_events := a2_insert_batch(s, base, ci, now_ms, ids, new_types, new_payloads,
                              new_cause_indexes, new_cause_attempts, new_lanes, new_settled,
                              new_available_at, null);
  -- Work index: lower(E, t), t the earliest of the unsettled events' available_at (now when not
  -- later); a settled batch leaves it alone.
  insert into a2_work as w (session_id, next_at)
  select s, min(greatest(coalesce(t.available_at, now_ms), now_ms))
    from unnest(new_settled, new_available_at) t(settled, available_at)
   where not coalesce(t.settled, false)
  having count(*) > 0
  on conflict (session_id) do update set next_at = least(w.next_at, excluded.next_at);
  owed := a2_owe_wake(s, true, found);
  r_has_pending := session_has_pending or coalesce(false = any(new_settled), false);
end $$;

-- When an unfinished event can next be claimed: a held event at its lease end, a delayed one at
-- its available_at, any other now. The rule of the work index's time
-- (docs/semantics.md#work-discovery), for a2_work_due and a2_sweep_work. One expression, so
-- inlined where it is used.
create or replace function a2_ready_at(claim_expires_at bigint, available_at bigint,
                                       now_ms bigint) returns bigint
language sql immutable as $$
  select case when claim_expires_at > now_ms then claim_expires_at
              when available_at > now_ms then available_at
              else now_ms end
$$;

-- The work index time of session s by its rows now: the earliest a2_ready_at of its
-- unfinished, not dead, lane-ready events of the current lifetime; null when it has none.
-- Volatile, with a query of its own: it reads a snapshot taken when it runs, not its caller's.
create or replace function a2_work_due(s text, now_ms bigint) returns bigint
language plpgsql volatile as $$
begin
  return (select min(a2_ready_at(e.claim_expires_at, e.available_at, now_ms))
            from a2_events e
           where e.session_id = s
             and e.processed_at is null
             and e.failed_at is null
             and e.lane_ready
             and e.idx > coalesce((select c.clear_index from a2_clears c
                                    where c.session_id = s), 0));
end $$;

-- A claim's work index writes (not for a claim with exclusions). Every other write only lowers
-- the entry E, so a claim is the one write that can hide work. It holds the session lock (every
-- write of the session takes it first, docs/postgres-layout.md#locking), so no other write of
-- the session runs meanwhile, and a2_work_due, reading a snapshot of its own, sees every write
-- that committed before the claim got the lock (S226, S227).
--
-- claimed and busy: E := the lesser of a2_work_due(s) and at_most (the claim's lease end when
-- it claimed: its rule names the lease end, even one already past; null when busy). The
-- upsert's update runs once it holds the row, so a2_work_due runs then. A session without an
-- entry (rows the original package wrote) gets now: too early at worst, and the next claim
-- sets it. stopped: the claim took max_events rows, the rest unseen: lower(E, now) instead
-- (which any write may do, without the session lock).
create or replace function a2_work_set(s text, now_ms bigint, at_most bigint, stopped boolean)
returns void language plpgsql as $$
begin
  if stopped then
    insert into a2_work as w (session_id, next_at) values (s, now_ms)
    on conflict on constraint a2_work_pkey do update
      set next_at = least(w.next_at, excluded.next_at);
  else
    insert into a2_work as w (session_id, next_at) values (s, now_ms)
    on conflict on constraint a2_work_pkey do update
      set next_at = coalesce(least(a2_work_due(s, now_ms), at_most), now_ms);
  end if;
end $$;

-- settled: no entry (a2_work_due is null under the session lock the claim holds).
create or replace function a2_work_drop(s text, now_ms bigint) returns void
language plpgsql as $$
begin
  perform 1 from a2_work w where w.session_id = s for update;
  if found and a2_work_due(s, now_ms) is null then
    delete from a2_work w where w.session_id = s;
  end if;
end $$;

-- A claim that claimed nothing, for a2_claim and a2_claim_group: r_verdict busy with r_retry_at,
-- the earliest lease end or future available_at among the candidates, or settled; and the work
-- index (not for a claim with exclusions): busy sets E to retry_at, settled removes it, as
-- a2_work_due reads it. Q10: excluded events count neither as claimable nor as busy. A held
-- candidate contributes its lease end, a delayed one its available_at.
create or replace function a2_claim_none(s text, now_ms bigint, excluded_indexes bigint[],
                                         out r_verdict text, out r_retry_at bigint)
language plpgsql as $$
begin
  select min(case when e.claim_expires_at > now_ms then e.claim_expires_at else e.available_at end)
    into r_retry_at from a2_events e
   where e.session_id = s
     and e.processed_at is null
     and e.failed_at is null
     and e.lane_ready
     and e.idx > coalesce((select c.clear_index from a2_clears c where c.session_id = s), 0)
     and (e.claim_expires_at > now_ms or e.available_at > now_ms)
     and not (e.idx = any(excluded_indexes));
  if r_retry_at is not null then
    r_verdict := 'busy';
    if coalesce(cardinality(excluded_indexes), 0) = 0 then
      perform a2_work_set(s, now_ms, null, false);
    end if;
    return;
  end if;
  r_verdict := 'settled';
  if coalesce(cardinality(excluded_indexes), 0) = 0 then
    perform a2_work_drop(s, now_ms);
  end if;
end $$;

-- claim_available. excluded_indexes: indexes the caller does not want; max_events: claim at
-- most this many (null: all). Returns one row per claimed event: r_verdict 'claimed',
-- r_clear_index and the event's stored columns (in no particular order: the caller sorts by
-- idx); or, when none was claimed, one row of r_verdict 'busy' with r_retry_at (the earliest
-- live lease end or future available_at among the candidates) or 'settled', the event columns
-- null. Rows, not an array of a2_events: a claim of 5,000 events spent a third of its time
-- building the array of composite rows and taking it apart again (docs/postgres-layout.md#a2_claim).
create or replace function a2_claim(s text, holder text, now_ms bigint, expires bigint,
                                    excluded_indexes bigint[], max_events bigint)
returns table (r_verdict text, r_retry_at bigint, r_clear_index bigint,
               session_id text, idx bigint, event_id text, event_type text, payload jsonb,
               created_at bigint, cause jsonb, lane text, processed_at bigint,
               processed_by_attempt integer, returned_event_ids jsonb, first_claimed_at bigint,
               last_claimed_at bigint, attempt_count integer, claim_holder text,
               claim_expires_at bigint, failure_count integer, last_failed_at bigint,
               last_failed_attempt integer, last_error text, failed_at bigint,
               available_at bigint)
language plpgsql
-- Generic plans, made once per connection (a2's connections' planner settings, above). With
-- custom plans (plpgsql's choice when they look cheaper than the generic one, as they did
-- whenever the statistics held sessions of thousands of pending events) the claim statement and
-- the work index upsert were planned again on every call: ~290 µs of planning in a ~450 µs
-- claim. A generic plan is made from the statistics of its first call (often a near empty
-- table) and kept: without seqscan and bitmapscan every statement reaches the session's rows by
-- an index scan and the chosen rows by their ctids (a TID scan) whatever the statistics said; a
-- bitmap scan would also not mark the index entries of dead rows, which the next call would
-- visit again.
as $$
#variable_conflict use_column
declare
  locked boolean;  -- a2_lock_session
  -- How many rows the claim took (the rows the claim statement returned).
  claimed_count bigint;
  none record;  -- a2_claim_none
begin
  -- The session lock first, as every write of a session takes it (docs/postgres-layout.md#locking):
  -- the claim comes wholly before or after any other write of the session, and its statements
  -- see every write that committed before it.
  locked := a2_lock_session(s);
  -- Eligible rows are locked in index order and updated in one statement, which also reads the
  -- boundary. A claim that waited on a row re-checks only that row, which is why clear sets
  -- lane_ready = false on the clearing handler's row. The limit (null: none) applies to locked
  -- rows that still qualify: a row that another claim took while this one waited for it fails
  -- the re-check and the next row is locked instead, so concurrent bounded claims get
  -- different events.
  return query
  with boundary as materialized (
    select coalesce((select c.clear_index from a2_clears c where c.session_id = s), 0)
      as clear_index
  ), eligible as materialized (
    select event.ctid as row_id from a2_events event
     where event.session_id = s
       and event.processed_at is null
       and event.failed_at is null
       and event.lane_ready
       and event.idx > (select b.clear_index from boundary b)
       and (event.claim_expires_at is null or event.claim_expires_at <= now_ms)
       and (event.available_at is null or event.available_at <= now_ms)
       and not (event.idx = any(excluded_indexes))
     order by event.idx
     limit max_events
     for update of event
  ), updated as (
    update a2_events claimed set
      attempt_count = claimed.attempt_count + 1,
      first_claimed_at = coalesce(claimed.first_claimed_at, now_ms),
      last_claimed_at = now_ms,
      claim_holder = holder,
      claim_expires_at = expires
    where claimed.ctid = any(array(select e.row_id from eligible e))
    returning claimed.*
  )
  select 'claimed'::text, null::bigint, (select b.clear_index from boundary b),
         u.session_id, u.idx, u.event_id, u.event_type, u.payload, u.created_at, u.cause, u.lane,
         u.processed_at, u.processed_by_attempt, u.returned_event_ids, u.first_claimed_at,
         u.last_claimed_at, u.attempt_count, u.claim_holder, u.claim_expires_at,
         u.failure_count, u.last_failed_at, u.last_failed_attempt, u.last_error, u.failed_at,
         u.available_at
    from updated u;
  get diagnostics claimed_count = row_count;
  if claimed_count > 0 then
    -- Work index (not for a claim with exclusions): E := a2_work_due, the earliest busy time
    -- of the ready rows, the ones just claimed (their lease end) included: exactly when the
    -- next claim can succeed; stopped at max_events, the rest unseen: lower(E, now).
    if coalesce(cardinality(excluded_indexes), 0) = 0 then
      perform a2_work_set(s, now_ms, expires, claimed_count = max_events);
    end if;
    return;
  end if;
  none := a2_claim_none(s, now_ms, excluded_indexes);
  r_verdict := none.r_verdict;
  r_retry_at := none.r_retry_at;
  return next;
end $$;

-- claim_available as one row of arrays: r_verdict, r_retry_at, r_clear_index and r_events, the
-- claimed rows as a2_events in index order (null when none). a2_complete_attempts' claim_next
-- reads the claim this way, as did the claim_available statement of earlier builds, whose
-- processes keep claiming through it while a schema is shared. No rule of its own: a2_claim's
-- rows, aggregated (a claimed row is lane_ready, which a2_claim does not return). PL/pgSQL, by
-- the cost rules above: as a SQL function (earlier builds) its statement, which no planner can
-- inline, was parsed and planned again on every claim_next.
create or replace function a2_claim_available(s text, holder text, now_ms bigint, expires bigint,
                                              excluded_indexes bigint[], max_events bigint,
                                              out r_verdict text,
                                              out r_retry_at bigint, out r_clear_index bigint,
                                              out r_events a2_events[])
language plpgsql as $$
begin
  select min(c.r_verdict), min(c.r_retry_at), min(c.r_clear_index),
         array_agg(row(c.session_id, c.idx, c.event_id, c.event_type, c.payload, c.created_at,
                       c.cause, c.lane, true, c.processed_at, c.processed_by_attempt,
                       c.returned_event_ids, c.first_claimed_at, c.last_claimed_at,
                       c.attempt_count, c.claim_holder, c.claim_expires_at, c.failure_count,
                       c.last_failed_at, c.last_failed_attempt, c.last_error, c.failed_at,
                       c.available_at)::a2_events order by c.idx)
           filter (where c.idx is not null)
    into r_verdict, r_retry_at, r_clear_index, r_events
    from a2_claim(s, holder, now_ms, expires, excluded_indexes, max_events) c;
end $$;

-- Claim groups: the claims of several callers without exclusions (src/postgres/write_groups.hpp,
-- docs/postgres-layout.md#write-groups), in one call, so one transaction. Parallel arrays in
-- request order: sessions (each at most once), holders, times (now_ms of each), lease ends,
-- limits (null: all). Returns k, the request's position (1-based), with each of a2_claim's rows
-- for it, the rows of one request together. An error of any request rolls the whole group back;
-- the store then sends each request alone.
--
-- The outcome is a2_claim's for each request in session order (ties cannot occur), which a test
-- compares column by column (test/postgres/write_groups_test.cpp, S235); the work is done in
-- sets, which per request costs the server about a third less than a call of a2_claim per
-- request (docs/postgres-layout.md#a2_claim_group):
-- * The sessions' locks, in session order, as a2_claim takes its session's.
-- * One statement locks every request's eligible rows, session by session in session order (the
--   order a2_sweep_work locks their a2_work rows, so two groups never wait for each other in a
--   cycle), each session's in index order under its limit, with the boundary it read: a2_claim's
--   claim statement's rule for many sessions, so the two are changed together.
-- * One statement updates every locked row (a TID scan; rows this transaction holds, each
--   request's values found by its session) and returns them.
-- * Then, in session order, each request's work index write: a2_work_set when it claimed (one
--   statement for all when all did), else a2_claim_none (busy or settled): a2_claim's own
--   helpers, called directly (a helper wrapping a2_work_set cost a call more per request).
create or replace function a2_claim_group(ss text[], holders text[], nows bigint[],
                                          expiries bigint[], limits bigint[])
returns table (k integer, r_verdict text, r_retry_at bigint, r_clear_index bigint,
               session_id text, idx bigint, event_id text, event_type text, payload jsonb,
               created_at bigint, cause jsonb, lane text, processed_at bigint,
               processed_by_attempt integer, returned_event_ids jsonb, first_claimed_at bigint,
               last_claimed_at bigint, attempt_count integer, claim_holder text,
               claim_expires_at bigint, failure_count integer, last_failed_at bigint,
               last_failed_attempt integer, last_error text, failed_at bigint,
               available_at bigint)
language plpgsql as $$
#variable_conflict use_column
declare
  row_ids tid[];       -- Every locked row.
  counts bigint[];     -- How many rows request k locked.
  boundaries bigint[]; -- The boundary request k read.
  none record;         -- a2_claim_none
begin
  -- The sessions' locks first, in session order (a2_lock_session, inlined into this query), as
  -- a2_claim takes its session's; then the sessions in session order (a subquery with its own
  -- order, which the planner keeps as the outer side of the lateral joins), each session's rows
  -- locked in index order.
  perform a2_lock_session(u.s)
     from (select distinct x.s from unnest(ss) x(s) order by x.s) u;
  with per_request as (
    select req.o, b.clear_index, count(l.row_id) as locked, array_agg(l.row_id) as ids
      from (select u.o, u.s, u.t, u.l
              from unnest(ss, nows, limits) with ordinality as u(s, t, l, o)
             order by u.s, u.o) req
      cross join lateral (
        select coalesce((select c.clear_index from a2_clears c where c.session_id = req.s), 0)
          as clear_index) b
      left join lateral (
        select event.ctid as row_id from a2_events event
         where event.session_id = req.s
           and event.processed_at is null
           and event.failed_at is null
           and event.lane_ready
           and event.idx > b.clear_index
           and (event.claim_expires_at is null or event.claim_expires_at <= req.t)
           and (event.available_at is null or event.available_at <= req.t)
         order by event.idx
         limit req.l
         for update of event) l on true
     group by req.o, b.clear_index
  )
  select array_agg(p.locked order by p.o), array_agg(p.clear_index order by p.o),
         (select array_agg(one_id) from per_request q, unnest(q.ids) one_id
           where one_id is not null)
    into counts, boundaries, row_ids
    from per_request p;
  -- The locked rows by a TID scan, never by a join (which a plan may turn into a scan of the
  -- sessions' rows); each row's request by its session (each at most once in ss).
  return query
  with updated as (
    update a2_events claimed set
      attempt_count = claimed.attempt_count + 1,
      first_claimed_at = coalesce(claimed.first_claimed_at,
                                  nows[array_position(ss, claimed.session_id)]),
      last_claimed_at = nows[array_position(ss, claimed.session_id)],
      claim_holder = holders[array_position(ss, claimed.session_id)],
      claim_expires_at = expiries[array_position(ss, claimed.session_id)]
     where claimed.ctid = any(row_ids)
    returning array_position(ss, claimed.session_id) as o, claimed.*
  )
  select u.o, 'claimed'::text, null::bigint, boundaries[u.o],
         u.session_id, u.idx, u.event_id, u.event_type, u.payload, u.created_at, u.cause, u.lane,
         u.processed_at, u.processed_by_attempt, u.returned_event_ids, u.first_claimed_at,
         u.last_claimed_at, u.attempt_count, u.claim_holder, u.claim_expires_at,
         u.failure_count, u.last_failed_at, u.last_failed_attempt, u.last_error, u.failed_at,
         u.available_at
    from updated u
   order by u.o;
  if 0 < all(counts) then
    -- Every request claimed (the common case): their work index writes in one statement, in
    -- session order (a volatile call in the target list runs after the sort).
    perform a2_work_set(x.s, x.t, x.e, x.n = x.l)
       from unnest(ss, nows, expiries, counts, limits) as x(s, t, e, n, l)
      order by x.s;
    return;
  end if;
  for k in select u.o::integer from unnest(ss) with ordinality as u(s, o) order by u.s, u.o loop
    if counts[k] > 0 then
      perform a2_work_set(ss[k], nows[k], expiries[k], counts[k] = limits[k]);
    else
      none := a2_claim_none(ss[k], nows[k], '{}'::bigint[]);
      r_verdict := none.r_verdict;
      r_retry_at := none.r_retry_at;
      return next;
    end if;
  end loop;
end $$;

-- renew_claims. The claims are parallel arrays of indexes and attempts. Returns r_renewed and
-- r_superseded (indexes). Q11: the attempt must be equal.
-- One row at a time, each reached by its full primary key in index order (the order claims lock
-- in), so no plan ever reads the rest of the session. Each update reads the boundary itself.
create or replace function a2_renew_claims(s text, holder text, now_ms bigint, expires bigint,
                                           claim_indexes bigint[], claim_attempts bigint[],
                                           out r_renewed bigint[], out r_superseded bigint[])
language plpgsql as $$
declare
  owed text;
  idxs bigint[];
  attempts bigint[];
  extended bigint[] := '{}';
  renewed bigint[] := '{}';
  superseded bigint[] := '{}';
  ci bigint;
  locked boolean;  -- a2_lock_session
begin
  -- The session lock first (docs/postgres-layout.md#locking).
  locked := a2_lock_session(s);
  select coalesce(array_agg(listed.idx order by listed.idx, listed.attempt), '{}'),
         coalesce(array_agg(listed.attempt order by listed.idx, listed.attempt), '{}')
    into idxs, attempts
    from (select distinct c.idx, c.attempt
            from unnest(claim_indexes, claim_attempts) c(idx, attempt)) listed;
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
  r_renewed := renewed;
  r_superseded := superseded;
  -- Work index: lower(E, expires) when it renewed anything (a lease renewed to end before the
  -- entry makes its event claimable sooner), and the work signal only when that moved the entry:
  -- a renewal that extends a lease lowers nothing (docs/semantics.md#work-discovery).
  if cardinality(extended) > 0 then
    insert into a2_work as w (session_id, next_at) values (s, expires)
    on conflict (session_id) do update set next_at = excluded.next_at
     where excluded.next_at < w.next_at;
    owed := a2_owe_wake(s, false, found);
  end if;
end $$;

-- release_claims (an a2 extension). The claims are parallel arrays of indexes and attempts.
-- Returns r_released and r_not_held (indexes; every listed index in exactly one of them). A
-- lease is released when the row is above the boundary, unsettled, not dead, at the attempt,
-- of the holder and live: holder and expiry are removed, nothing else changes, but for a
-- snooze: with available_at_ms after now_ms each released row gets available_at =
-- available_at_ms, as a delayed retry does; null or not after now_ms leaves the row's
-- available_at as it is. As in renew_claims, one row at a time by its full primary key in index
-- order, each update reading the boundary itself. Raises nothing: an index above the head is
-- not held.
create or replace function a2_release_claims(s text, holder text, now_ms bigint,
                                             claim_indexes bigint[], claim_attempts bigint[],
                                             available_at_ms bigint,
                                             out r_released bigint[], out r_not_held bigint[])
language plpgsql as $$
declare
  owed text;
  idxs bigint[];
  attempts bigint[];
  released bigint[] := '{}';
  not_held bigint[] := '{}';
  snooze boolean := coalesce(available_at_ms > now_ms, false);
  locked boolean;  -- a2_lock_session
begin
  -- The session lock first (docs/postgres-layout.md#locking).
  locked := a2_lock_session(s);
  select coalesce(array_agg(listed.idx order by listed.idx, listed.attempt), '{}'),
         coalesce(array_agg(listed.attempt order by listed.idx, listed.attempt), '{}')
    into idxs, attempts
    from (select distinct c.idx, c.attempt
            from unnest(claim_indexes, claim_attempts) c(idx, attempt)) listed;
  for i in 1 .. coalesce(array_length(idxs, 1), 0) loop
    continue when idxs[i] = any(released);
    update a2_events set claim_holder = null, claim_expires_at = null,
                         available_at = case when snooze then available_at_ms
                                             else a2_events.available_at end
     where session_id = s and idx = idxs[i]
       and idx > coalesce((select clear_index from a2_clears where session_id = s), 0)
       and attempt_count = attempts[i]
       and processed_at is null
       and failed_at is null
       and claim_holder = holder
       and claim_expires_at > now_ms;
    if found then
      released := released || idxs[i];
    end if;
  end loop;
  for i in 1 .. coalesce(array_length(idxs, 1), 0) loop
    if not (idxs[i] = any(released)) and not (idxs[i] = any(not_held)) then
      not_held := not_held || idxs[i];
    end if;
  end loop;
  r_released := released;
  r_not_held := not_held;
  -- Work index and signal: a released event is claimable again at once, or from a snooze's
  -- available_at: lower(E, available_at or now).
  if cardinality(released) > 0 then
    insert into a2_work as w (session_id, next_at)
    values (s, case when snooze then available_at_ms else now_ms end)
    on conflict (session_id) do update set next_at = least(w.next_at, excluded.next_at);
    owed := a2_owe_wake(s, false, true);
  end if;
end $$;

-- A completion whose parent row is missing: superseded (the caller returns) when a clear has
-- moved the boundary to or above i since (reclaim may then have deleted the row while the caller
-- waited for its lock), else no event at i. Shared by a2_complete_attempt and
-- a2_complete_attempts.
create or replace function a2_missing_parent(s text, i bigint) returns void
language plpgsql as $$
begin
  if i > coalesce((select clear_index from a2_clears where session_id = s), 0) then
    perform a2_no_event(s, i);
  end if;
end $$;

-- One completion: the one copy of the completion rules, run by a2_complete_attempt and by
-- a2_complete_attempts for each completion. The children are parallel arrays in order: ids,
-- types, payloads (a jsonb array), lanes, settled, available_at (null: none). Returns r_verdict
-- (completed|superseded), the children's rows in r_events, and r_work_at: the time t of the
-- work index's lower(E, t) when the completion wrote unsettled children or handed its lane to a
-- next pending event (else null). apply_work (a2_complete_attempt): the function lowers the work
-- index entry to it and sends the work signal itself; else the caller applies it (a2_complete_attempts
-- once for the call, or, with claim_next, the claim does).
create or replace function a2_complete_one(s text, i bigint, attempt bigint, now_ms bigint,
                                           new_ids text[], new_types text[],
                                           new_payloads jsonb, new_lanes text[],
                                           new_settled boolean[], new_available_at bigint[],
                                           apply_work boolean,
                                           out r_verdict text, out r_events a2_events[],
                                           out r_work_at bigint)
language plpgsql
-- Generic plans, index and TID scans only (a2's connections' planner settings, above): with
-- custom plans the statement after the session lock was planned again on every call once the
-- statistics held a few thousand rows (~300 µs of planning in each completion).
as $$
declare
  locked boolean;  -- a2_lock_session
  owed text;
  ids text[] := coalesce(new_ids, '{}');
  k integer;
  ci bigint;
  base bigint;
  parent a2_events;
  stored a2_events[];
  owners a2_events[];
  r a2_events;
  one_id text;
  pinned boolean;
  first_taken boolean;
begin
  r_verdict := 'superseded';
  -- The session lock first, as every write of a session takes it (docs/postgres-layout.md#locking;
  -- re-entrant: a2_complete_attempts and the groups hold it already). Then the parent row above
  -- the boundary, locked. None: at or below the boundary (superseded), or missing, both
  -- a2_missing_parent's case (it reads the boundary again, which only grows).
  locked := a2_lock_session(s);
  select * into parent from a2_events
   where session_id = s and idx = i
     and idx > coalesce((select clear_index from a2_clears where session_id = s), 0)
     for update;
  if not found then
    perform a2_missing_parent(s, i);
    return;
  end if;

  if parent.processed_at is not null then
    -- An idempotent retry of a lost acknowledgement, or not ours.
    if coalesce(parent.processed_by_attempt, 0) <> attempt then
      return;
    end if;
    if parent.returned_event_ids is null or parent.returned_event_ids <> to_jsonb(ids) then
      perform a2_duplicate('completion_mismatch',
        jsonb_build_object('session', s, 'index', i, 'attempt', attempt),
        format('the retry of the completion of event %s in session ''%s'' does not match its recorded children', i, s));
    end if;
    stored := array(select e from a2_events e where e.event_id = any(ids) order by e.idx);
    if cardinality(stored) < cardinality(ids)
       and i <= coalesce((select clear_index from a2_clears where session_id = s), 0) then
      return;
    end if;
    if cardinality(stored) < cardinality(ids) then
      perform a2_duplicate('completion_mismatch',
        jsonb_build_object('session', s, 'index', i, 'attempt', attempt),
        format('a child of event %s in session ''%s'' is missing', i, s));
    end if;
    foreach r in array stored loop
      if r.session_id <> s or r.cause is distinct from
         jsonb_build_object('index', i, 'attempt', attempt) then
        perform a2_duplicate('completion_mismatch',
          jsonb_build_object('session', s, 'index', i, 'attempt', attempt),
          format('child id ''%s'' of event %s in session ''%s'' belongs to another event',
                 r.event_id, i, s));
      end if;
    end loop;
    r_verdict := 'completed';
    r_events := coalesce(stored, '{}');
    return;
  end if;

  -- The attempt fence: claim expiry and holder identity are not checked.
  if parent.attempt_count <> attempt or parent.claim_holder is null
     or parent.failed_at is not null or parent.last_failed_attempt = attempt then
    return;
  end if;

  -- One statement (each statement costs its executor start, the larger part of a small one): the
  -- boundary and head, whether the parent has pins and whether a row holds the first child id,
  -- and the parent's update, which applies only above that boundary (the row is ours: locked
  -- above the boundary it read, and no clear can commit while the session lock is held). An
  -- error raised after it rolls it back with everything else.
  update a2_events parent_row set
    processed_at = now_ms,
    processed_by_attempt = attempt,
    returned_event_ids = to_jsonb(ids),
    claim_holder = null,
    claim_expires_at = null
   where parent_row.session_id = s and parent_row.idx = i
     and parent_row.idx > coalesce((select clear_index from a2_clears where session_id = s), 0)
  -- Uncorrelated subqueries: each runs once (a join with them would copy its row for the
  -- update's recheck).
  returning coalesce((select clear_index from a2_clears where session_id = s), 0),
            coalesce((select idx from a2_events where session_id = s
                       order by idx desc limit 1), 0),
            exists(select 1 from a2_snapshot_pins where session_id = s and event_index = i),
            exists(select 1 from a2_events where event_id = ids[1])
       into ci, base, pinned, first_taken;
  if not found then
    -- A clear moved the boundary to or above i while this call waited for the session lock.
    return;
  end if;
  -- As in append: the full ownership check only when some row holds one of the ids. The error
  -- names the first taken id in child order.
  if first_taken or cardinality(ids) > 1 then
    foreach one_id in array ids loop
      if exists(select 1 from a2_events where event_id = one_id) then
        owners := array(select o2 from a2_live_owners(s, ci, ids) o2);
        foreach one_id in array ids loop
          foreach r in array owners loop
            if r.event_id = one_id then
              perform a2_duplicate('child_id_taken',
                jsonb_build_object('session', s, 'index', i, 'id', one_id),
                format('child event id ''%s'' of event %s already exists (session ''%s'')',
                       one_id, i, s));
            end if;
          end loop;
        end loop;
        exit;
      end if;
    end loop;
  end if;
  if pinned then
    perform a2_release_pins(s, i);
  end if;
  if parent.lane is not null and a2_lane_pass(s, parent.lane, ci) then
    r_work_at := now_ms;
  end if;
  r_verdict := 'completed';
  if cardinality(ids) = 0 then
    r_events := '{}';
  else
    r_events := a2_insert_batch(s, base, ci, now_ms, ids, new_types, new_payloads, null, null,
                                new_lanes, new_settled, new_available_at,
                                jsonb_build_object('index', i, 'attempt', attempt));
    -- The unsettled children's earliest time (available_at when later than now, else now), by
    -- expressions rather than a statement over unnest (as many elements as the longer array).
    for k in 1 .. greatest(coalesce(cardinality(new_settled), 0),
                           coalesce(cardinality(new_available_at), 0)) loop
      if not coalesce(new_settled[k], false) then
        r_work_at := least(r_work_at, greatest(coalesce(new_available_at[k], now_ms), now_ms));
      end if;
    end loop;
  end if;
  -- apply_work (a2_complete_attempt): the work index's lower(E, r_work_at), last of the locks.
  if apply_work and r_work_at is not null then
    insert into a2_work as w (session_id, next_at) values (s, r_work_at)
    on conflict (session_id) do update set next_at = least(w.next_at, excluded.next_at);
  end if;
  -- One wake-up: the feeds when there are children, the work signal with the work index.
  if cardinality(ids) > 0 or (apply_work and r_work_at is not null) then
    owed := a2_owe_wake(s, cardinality(ids) > 0, apply_work and r_work_at is not null);
  end if;
end $$;

-- complete_attempt: a2_complete_one with apply_work (the work index's lower(E, t) and the work
-- signal when the completion wrote unsettled children or handed its lane on). Returns r_verdict
-- and r_events.
create or replace function a2_complete_attempt(s text, i bigint, attempt bigint, now_ms bigint,
                                               new_ids text[], new_types text[],
                                               new_payloads jsonb, new_lanes text[],
                                               new_settled boolean[], new_available_at bigint[],
                                               out r_verdict text, out r_events a2_events[])
language plpgsql as $$
declare
  one record;
begin
  -- An assignment, not a statement: no executor start, no function scan.
  one := a2_complete_one(s, i, attempt, now_ms, new_ids, new_types, new_payloads, new_lanes,
                         new_settled, new_available_at, true);
  r_verdict := one.r_verdict;
  r_events := one.r_events;
end $$;

-- Completion groups: the completions of several callers without claim_next
-- (src/postgres/write_groups.hpp, docs/postgres-layout.md#write-groups), in one call, so one
-- transaction. Parallel arrays in request order: sessions (each at most once), indexes, attempts, times (now_ms of each), child_counts (how many children
-- each has); the children flattened in request order as in a2_complete_one (ids, types, lanes,
-- settled, available_at), except new_payloads, a jsonb array of one array of payloads per
-- request. One row per request: k, its position (1-based), its r_verdict and r_events, and
-- r_wake, its own wake-ups. An error of any request rolls the whole group back; the store then
-- sends each request alone.
--
-- Two paths with one outcome: the group's rows and replies are those of a2_complete_one with the
-- work index (a2_complete_attempt's) called for each request in session order, which a test
-- compares column by column (test/postgres/write_groups_test.cpp, S236).
-- * First the sessions' locks in session order, then, in one statement, each request's parent
--   row (locked, as a2_complete_one locks it) in session order: the locks of a2_complete_one
--   called in a loop, taken session locks first, so groups take sessions in the order
--   a2_sweep_work takes their a2_work rows and never wait for each other in a cycle.
-- * The set path, when every request is plain and the connection takes its wake-ups by reply
--   (this a2's): plain is a parent that a2_complete_one would complete (the attempt's, unfinished,
--   not dead) without a lane, without snapshot pins, and children without lanes whose ids no row
--   holds. One statement updates every parent (above the boundary read after the locks; a
--   parent a clear moved below it meanwhile is superseded, as in a2_complete_one), inserts the
--   children of the completed ones (each session's at its head, read after the locks, plus the
--   child's rank) and lowers the work index entries of the sessions with unsettled children to
--   their earliest time, in session order, after the inserts. It is a2_complete_one's rule for
--   that case (its parent update, a2_insert_batch's columns, its work index lowering and its
--   wake-ups) as one statement for all the requests: change the two together. Per request it
--   costs the server about 30% less than the loop below (docs/postgres-layout.md#a2_complete_group).
--   Two requests with one child id, or an id another transaction stores meanwhile, fail the
--   INSERT (unique violation), so the group fails and each request goes alone.
-- * Otherwise: a2_complete_one for each request in session order (its locks already held);
--   a2.wake, when a request set it, is reset before the next.
create or replace function a2_complete_group(ss text[], idxs bigint[], attempts bigint[],
                                             nows bigint[], child_counts bigint[],
                                             new_ids text[], new_types text[],
                                             new_payloads jsonb, new_lanes text[],
                                             new_settled boolean[], new_available_at bigint[],
                                             out k integer, out r_verdict text,
                                             out r_wake text, out r_events a2_events[])
returns setof record
language plpgsql as $$
declare
  n integer := coalesce(cardinality(ss), 0);
  firsts integer[] := '{}';  -- Request k's first child.
  owners integer[] := '{}';  -- Child j's request.
  first_child integer := 1;
  last_child integer;
  plain boolean;
  parent_ids tid[];          -- The parent rows locked.
  one record;
  cleared text;
begin
  for k in 1 .. n loop
    firsts[k] := first_child;
    last_child := first_child + coalesce(child_counts[k], 0)::integer - 1;
    for j in first_child .. last_child loop
      owners[j] := k;
    end loop;
    first_child := last_child + 1;
  end loop;
  -- The sessions' locks first, in session order (a2_lock_session, inlined into this query), as
  -- a2_complete_one takes its session's; then the parent rows in session order (a subquery with
  -- its own order, which the planner keeps as the outer side of the lateral join).
  perform a2_lock_session(u.s)
     from (select distinct x.s from unnest(ss) x(s) order by x.s) u;
  select bool_and(coalesce(p.completes and p.lane is null, false)), array_agg(p.row_id)
    into plain, parent_ids
    from (select u.o, u.s, u.i, u.a
            from unnest(ss, idxs, attempts) with ordinality as u(s, i, a, o)
           order by u.s, u.o) r
    left join lateral (
      select parent.ctid as row_id,
             parent.processed_at is null and parent.attempt_count = r.a
             and parent.claim_holder is not null and parent.failed_at is null
             and parent.last_failed_attempt is distinct from r.a as completes,
             parent.lane
        from a2_events parent
       where parent.session_id = r.s and parent.idx = r.i
         and parent.idx > coalesce((select c.clear_index from a2_clears c
                                     where c.session_id = r.s), 0)
         for update) p on true;
  if plain and current_setting('a2.wake_by_reply', true) = 'on'
     and coalesce(cardinality(array_remove(new_lanes, null)), 0) = 0
     -- Read after the locks: no child id held, no parent pinned.
     and (select e.idx from a2_events e where e.event_id = any(new_ids) limit 1) is null
     -- (each pin probed by its key, never by a join, which a plan may turn into a scan)
     and (select x.i from unnest(ss, idxs) as x(s, i)
           where (select pin.event_index from a2_snapshot_pins pin
                   where pin.session_id = x.s and pin.event_index = x.i limit 1) is not null
           limit 1) is null then
    -- The set path.
    return query
    with req as (
      select u.o::integer as o, u.s, u.i, u.a, u.t, coalesce(u.cc, 0)::integer as cc
        from unnest(ss, idxs, attempts, nows, child_counts) with ordinality
             as u(s, i, a, t, cc, o)
    ), done as (
      -- The parents by a TID scan of the rows locked above, never by a join (which a plan may
      -- turn into a scan of the sessions' rows); each row's request by its session.
      update a2_events parent set
        processed_at = nows[array_position(ss, parent.session_id)],
        processed_by_attempt = attempts[array_position(ss, parent.session_id)],
        returned_event_ids = to_jsonb(coalesce(
          new_ids[firsts[array_position(ss, parent.session_id)] :
                  firsts[array_position(ss, parent.session_id)]
                  + coalesce(child_counts[array_position(ss, parent.session_id)], 0)::integer
                  - 1], '{}')),
        claim_holder = null,
        claim_expires_at = null
       where parent.ctid = any(parent_ids)
         and parent.idx > coalesce((select c.clear_index from a2_clears c
                                     where c.session_id = parent.session_id), 0)
      returning array_position(ss, parent.session_id) as o
    ), inserted as (
      insert into a2_events as child (session_id, idx, event_id, event_type, payload,
                                      created_at, cause, processed_at, available_at)
      select req.s,
             coalesce((select head.idx from a2_events head where head.session_id = req.s
                        order by head.idx desc limit 1), 0) + (c.j - firsts[req.o] + 1),
             c.id, c.ty,
             coalesce(new_payloads -> (req.o - 1) -> (c.j::integer - firsts[req.o]),
                      'null'::jsonb),
             req.t, jsonb_build_object('index', req.i, 'attempt', req.a),
             case when coalesce(c.settled, false) then req.t end,
             case when c.available_at > req.t then c.available_at end
        from unnest(new_ids, new_types, new_settled, new_available_at, owners)
             with ordinality as c(id, ty, settled, available_at, owner, j)
        join req on req.o = c.owner
        join done on done.o = c.owner
       order by req.s, c.j
      returning child as row_value
    ), lowered as (
      -- After every insert (the aggregate reads them all): the last row lock, as in
      -- a2_complete_one.
      insert into a2_work as w (session_id, next_at)
      select (x.row_value).session_id,
             min(coalesce((x.row_value).available_at, (x.row_value).created_at))
        from inserted x
       where (x.row_value).processed_at is null
       group by (x.row_value).session_id
       order by 1
      on conflict (session_id) do update set next_at = least(w.next_at, excluded.next_at)
    )
    select req.o,
           case when done.o is null then 'superseded' else 'completed' end,
           -- a2_owe_wake's flags: 1 the feeds (children), 2 the work signal (unsettled ones).
           case when done.o is null or req.cc = 0 then ''
                when exists (select 1 from inserted x
                              where (x.row_value).session_id = req.s
                                and (x.row_value).processed_at is null) then '3'
                else '1' end,
           case when done.o is not null then
             coalesce((select array_agg(x.row_value order by (x.row_value).idx) from inserted x
                        where (x.row_value).session_id = req.s), '{}') end
      from req left join done on done.o = req.o
     order by req.o;
    return;
  end if;
  for k in select u.o::integer from unnest(ss) with ordinality as u(s, o) order by u.s, u.o loop
    first_child := firsts[k];
    last_child := first_child + coalesce(child_counts[k], 0)::integer - 1;
    one := a2_complete_one(ss[k], idxs[k], attempts[k], nows[k],
                           coalesce(new_ids[first_child:last_child], '{}'),
                           coalesce(new_types[first_child:last_child], '{}'),
                           coalesce(new_payloads -> (k - 1), '[]'::jsonb),
                           coalesce(new_lanes[first_child:last_child], '{}'),
                           coalesce(new_settled[first_child:last_child], '{}'),
                           coalesce(new_available_at[first_child:last_child], '{}'),
                           true);
    r_verdict := one.r_verdict;
    r_events := one.r_events;
    r_wake := current_setting('a2.wake', true);
    if r_wake <> '' then
      cleared := set_config('a2.wake', '', true);
    end if;
    return next;
  end loop;
end $$;

-- complete_attempts (an a2 extension): many completions of one session in one call, then
-- optionally claim_next. The completions are parallel arrays in list order (indexes, attempts,
-- child_counts: how many children each has); the children are flattened in list order as in
-- a2_complete_one (ids, types, lanes, settled, available_at), except new_payloads, a jsonb
-- array holding one array of payloads per completion. holder null: no claim_next; else expires
-- and max_events are the claim's. Returns one element per reply row in r_parts, r_verdicts and
-- r_events (parallel): part k (1-based) for completion k, its verdict, and its children's rows
-- (one element with a null row when it has none); then part 0, the claim's verdict and its
-- rows, with r_retry_at and r_clear_index.
--
-- Each completion runs a2_complete_one (the one copy of the completion rules) in list
-- order, so it gets exactly the verdict and effects the single call would give it at its place
-- in the list; the first error raises and rolls the whole call back. That is the "errors first,
-- against the state at the start of the call" rule of docs/semantics.md#complete_attempts: a
-- completion's error depends only on its own parent row, its own child ids and the boundary,
-- which no earlier completion of the call changes (indexes and child ids are distinct, checked
-- before the call), except "no event at an index", which is therefore decided from the rows
-- locked at the start (an index naming a child of an earlier completion is above the head
-- then). Lock order: every parent row first, in index order (the order claims lock in), then
-- the session lock, taken by the first completion that applies (as a2_complete_one takes
-- them); docs/postgres-layout.md#locking.
create or replace function a2_complete_attempts(s text, now_ms bigint,
                                                completion_indexes bigint[],
                                                completion_attempts bigint[],
                                                child_counts bigint[], new_ids text[],
                                                new_types text[], new_payloads jsonb,
                                                new_lanes text[], new_settled boolean[],
                                                new_available_at bigint[], holder text,
                                                expires bigint, max_events bigint,
                                                out r_parts bigint[], out r_verdicts text[],
                                                out r_events a2_events[], out r_retry_at bigint,
                                                out r_clear_index bigint)
language plpgsql as $$
declare
  locked boolean;  -- a2_lock_session
  owed text;
  n integer := coalesce(cardinality(completion_indexes), 0);
  present boolean[] := array_fill(false, array[n]);
  k integer;
  first_child integer := 1;
  last_child integer;
  verdict text;
  part_rows a2_events[];
  one_row a2_events;
  out_n integer := 0;
  work_at bigint;
begin
  r_parts := '{}';
  r_verdicts := '{}';
  r_events := '{}';
  -- The session lock first (docs/postgres-layout.md#locking), then the parent rows, each by its
  -- full primary key, in index order.
  locked := a2_lock_session(s);
  for k in select listed.ord from unnest(completion_indexes) with ordinality listed(idx, ord)
            order by listed.idx loop
    perform 1 from a2_events
      where session_id = s and idx = completion_indexes[k]
        and idx > coalesce((select clear_index from a2_clears where session_id = s), 0)
      for update;
    present[k] := found;
  end loop;
  for k in 1 .. n loop
    last_child := first_child + coalesce(child_counts[k], 0)::integer - 1;
    if present[k] then
      select done.r_verdict, done.r_events, least(work_at, done.r_work_at)
        into verdict, part_rows, work_at
        from a2_complete_one(s, completion_indexes[k], completion_attempts[k], now_ms,
                                 coalesce(new_ids[first_child:last_child], '{}'),
                                 coalesce(new_types[first_child:last_child], '{}'),
                                 coalesce(new_payloads->(k - 1), '[]'::jsonb),
                                 coalesce(new_lanes[first_child:last_child], '{}'),
                                 coalesce(new_settled[first_child:last_child], '{}'),
                                 coalesce(new_available_at[first_child:last_child], '{}'),
                                 false) done;
    else
      -- Not a row above the boundary at the start of the call.
      perform a2_missing_parent(s, completion_indexes[k]);
      verdict := 'superseded';
      part_rows := '{}';
    end if;
    if coalesce(cardinality(part_rows), 0) = 0 then
      out_n := out_n + 1;
      r_parts[out_n] := k;
      r_verdicts[out_n] := verdict;
      r_events[out_n] := null;
    else
      foreach one_row in array part_rows loop
        out_n := out_n + 1;
        r_parts[out_n] := k;
        r_verdicts[out_n] := verdict;
        r_events[out_n] := one_row;
      end loop;
    end if;
    first_child := last_child + 1;
  end loop;
  if holder is null then
    -- Work index and signal: lower(E, t) for the children and lane handoffs of the call.
    if work_at is not null then
      insert into a2_work as w (session_id, next_at) values (s, work_at)
      on conflict (session_id) do update set next_at = least(w.next_at, excluded.next_at);
      owed := a2_owe_wake(s, false, true);
    end if;
    return;
  end if;
  -- claim_next: claim_available's own function, after the completions; the work index gets
  -- the claim's update only.
  select claim.r_verdict, claim.r_retry_at, claim.r_clear_index, claim.r_events
    into verdict, r_retry_at, r_clear_index, part_rows
    from a2_claim_available(s, holder, now_ms, expires, '{}'::bigint[], max_events) claim;
  if coalesce(cardinality(part_rows), 0) = 0 then
    out_n := out_n + 1;
    r_parts[out_n] := 0;
    r_verdicts[out_n] := verdict;
    r_events[out_n] := null;
  else
    foreach one_row in array part_rows loop
      out_n := out_n + 1;
      r_parts[out_n] := 0;
      r_verdicts[out_n] := verdict;
      r_events[out_n] := one_row;
    end loop;
  end if;
end $$;

-- complete_attempts groups: the calls of several callers of a2_complete_attempts (complete_attempts,
-- and complete_attempt with claim_next: src/postgres/write_groups.hpp,
-- docs/postgres-layout.md#write-groups) in one call, so one transaction. Parallel arrays in
-- request order: sessions (each at most once), times (now_ms of each), completion_counts (how many completions each has),
-- holders (null: no claim_next), expiries and limits of the claims; the completions flattened
-- in request order (indexes, attempts, child_counts), their children flattened in that order
-- (ids, types, lanes, settled, available_at), and new_payloads a jsonb array of one element per
-- request, a2_complete_attempts' new_payloads. Each request is a2_complete_attempts', in
-- session order (as a2_append_group's). One row per request: k, its position (1-based),
-- a2_complete_attempts' results, and r_wake, its own wake-ups (a2.wake, reset before the next).
-- An error of any request rolls the whole group back; the store then sends each request alone.
create or replace function a2_complete_attempts_group(ss text[], nows bigint[],
                                                      completion_counts bigint[],
                                                      completion_indexes bigint[],
                                                      completion_attempts bigint[],
                                                      child_counts bigint[], new_ids text[],
                                                      new_types text[], new_payloads jsonb,
                                                      new_lanes text[], new_settled boolean[],
                                                      new_available_at bigint[], holders text[],
                                                      expiries bigint[], limits bigint[],
                                                      out k integer, out r_wake text,
                                                      out r_parts bigint[], out r_verdicts text[],
                                                      out r_events a2_events[],
                                                      out r_retry_at bigint,
                                                      out r_clear_index bigint)
returns setof record
language plpgsql as $$
declare
  n integer := coalesce(cardinality(ss), 0);
  first_completions integer[] := '{}';
  first_children integer[] := '{}';
  next_completion integer := 1;
  next_child integer := 1;
  i integer;
  cf integer;
  cl integer;
  hf integer;
  hl integer;
  one record;
  cleared text;
begin
  for k in 1 .. n loop
    first_completions[k] := next_completion;
    first_children[k] := next_child;
    for i in next_completion .. next_completion + coalesce(completion_counts[k], 0)::integer - 1
    loop
      next_child := next_child + coalesce(child_counts[i], 0)::integer;
    end loop;
    next_completion := next_completion + coalesce(completion_counts[k], 0)::integer;
  end loop;
  for k in select u.o::integer from unnest(ss) with ordinality as u(s, o) order by u.s, u.o loop
    cf := first_completions[k];
    cl := cf + coalesce(completion_counts[k], 0)::integer - 1;
    hf := first_children[k];
    hl := (case when k < n then first_children[k + 1] else next_child end) - 1;
    -- An assignment, not a query: no executor start per request.
    one := a2_complete_attempts(ss[k], nows[k],
                                coalesce(completion_indexes[cf:cl], '{}'),
                                coalesce(completion_attempts[cf:cl], '{}'),
                                coalesce(child_counts[cf:cl], '{}'),
                                coalesce(new_ids[hf:hl], '{}'), coalesce(new_types[hf:hl], '{}'),
                                coalesce(new_payloads -> (k - 1), '[]'::jsonb),
                                coalesce(new_lanes[hf:hl], '{}'),
                                coalesce(new_settled[hf:hl], '{}'),
                                coalesce(new_available_at[hf:hl], '{}'),
                                holders[k], expiries[k], limits[k]);
    r_parts := one.r_parts;
    r_verdicts := one.r_verdicts;
    r_events := one.r_events;
    r_retry_at := one.r_retry_at;
    r_clear_index := one.r_clear_index;
    r_wake := current_setting('a2.wake', true);
    if r_wake <> '' then
      cleared := set_config('a2.wake', '', true);
    end if;
    return next;
  end loop;
end $$;

-- fail_attempt. retry_at: not claimable before then (null, or not after now_ms: at once; a
-- dead letter ignores it). Returns r_verdict (failed|dead_lettered|superseded) and
-- r_failure_count.
create or replace function a2_fail_attempt(s text, i bigint, attempt bigint, error_text text,
                                           max_failures bigint, now_ms bigint, retry_at bigint,
                                           out r_verdict text, out r_failure_count bigint)
language plpgsql as $$
declare
  owed text;
  ci bigint;
  cur record;
  failures integer;
  dead boolean;
  locked boolean;  -- a2_lock_session
begin
  -- The session lock first (docs/postgres-layout.md#locking).
  locked := a2_lock_session(s);
  select boundary.clear_index as boundary_index, current_row.* into cur
    from (select coalesce((select clear_index from a2_clears where session_id = s), 0)
            as clear_index) boundary
    left join lateral (
      select * from a2_events
       where session_id = s and idx = i and idx > boundary.clear_index
       for update
    ) current_row on true;
  ci := cur.boundary_index;
  r_verdict := 'superseded';
  r_failure_count := 0;
  if i <= ci then
    return;
  end if;
  if cur.idx is null then
    -- Deleted while this statement waited for its lock, after a clear.
    if i <= coalesce((select clear_index from a2_clears where session_id = s), 0) then
      return;
    end if;
    perform a2_no_event(s, i);
  end if;
  r_failure_count := cur.failure_count;
  if cur.processed_at is not null or cur.attempt_count <> attempt then
    return;
  end if;
  if cur.failed_at is not null then
    r_verdict := 'dead_lettered';
    return;
  end if;
  if cur.last_failed_attempt = attempt and cur.claim_holder is null then
    r_verdict := 'failed';
    return;
  end if;
  if cur.claim_holder is null then
    return;
  end if;
  failures := cur.failure_count + 1;
  dead := failures >= max_failures;
  update a2_events set
    failure_count = failures,
    last_error = error_text,
    last_failed_at = now_ms,
    last_failed_attempt = attempt,
    claim_holder = null,
    claim_expires_at = null,
    failed_at = case when dead then now_ms end,
    available_at = case when not dead and retry_at > now_ms then retry_at end
   where session_id = s and idx = i;
  r_failure_count := failures;
  if dead then
    perform a2_release_pins(s, i);
    r_verdict := 'dead_lettered';
    -- Work index and signal: lower(E, now) only when the lane has a next pending event.
    insert into a2_work as w (session_id, next_at)
    select s, now_ms
     where cur.lane is not null
       and (select next_row.idx from a2_events next_row
             where next_row.session_id = s and next_row.lane = cur.lane
               and next_row.processed_at is null and next_row.idx > i
             order by next_row.idx limit 1) is not null
    on conflict (session_id) do update set next_at = least(w.next_at, excluded.next_at);
    if found then
      owed := a2_owe_wake(s, false, true);
    end if;
    return;
  end if;
  r_verdict := 'failed';
  -- Work index and signal: lower(E, the retry time, or now).
  insert into a2_work as w (session_id, next_at)
  values (s, case when retry_at > now_ms then retry_at else now_ms end)
  on conflict (session_id) do update set next_at = least(w.next_at, excluded.next_at);
  owed := a2_owe_wake(s, false, true);
end $$;

-- redrive. action: retry|skip. Returns r_redriven and r_has_pending.
create or replace function a2_redrive(s text, i bigint, action text, now_ms bigint,
                                      out r_redriven boolean, out r_has_pending boolean)
language plpgsql as $$
declare
  locked boolean;  -- a2_lock_session
  owed text;
  is_skip boolean := action = 'skip';
  dead record;
  is_dead boolean;
begin
  -- The session lock first, in append's order: lane promotion (a skip) must see every append
  -- that committed before it, and both actions must come wholly before or after a clear, whose
  -- boundary their answer reads twice (found by the concurrent model check, S248). The row lock
  -- serializes both with claims.
  locked := a2_lock_session(s);
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
    update a2_events set processed_at = now_ms, lane_ready = false
     where session_id = s and idx = i;
    if dead.lane is not null then
      perform a2_lane_handoff(s, dead.lane,
        coalesce((select clear_index from a2_clears where session_id = s), 0));
    end if;
  end if;
  r_redriven := is_dead;
  -- Work index and signal: a retried event is claimable at once, a skip hands its lane on:
  -- lower(E, now).
  if is_dead then
    insert into a2_work as w (session_id, next_at) values (s, now_ms)
    on conflict (session_id) do update set next_at = least(w.next_at, excluded.next_at);
    owed := a2_owe_wake(s, false, true);
  end if;
  -- "Is anything pending": the ordered first entry of a2_events_pending (see the header).
  r_has_pending := (
    select idx from a2_events
     where session_id = s and processed_at is null
       and idx > coalesce((select clear_index from a2_clears where session_id = s), 0)
     order by idx limit 1) is not null;
end $$;

-- put_snapshots. The writes are parallel arrays (one write per index, ascending): indexes and
-- states (a jsonb array); the pins are pairs (checkpoint index, event index) as two parallel
-- arrays.
create or replace function a2_put_snapshots(s text, reducer text, now_ms bigint,
                                            write_indexes bigint[], write_states jsonb,
                                            pin_checkpoints bigint[], pin_events bigint[])
returns void language plpgsql as $$
declare
  ci bigint;
  head_index bigint;
  writes jsonb;
  latest jsonb;
  latest_index bigint;
  final_head bigint;
  advances boolean;
  w jsonb;
  w_index bigint;
  locked boolean;  -- a2_lock_session
begin
  -- The session lock first (docs/postgres-layout.md#locking); it serializes the writes of one
  -- reducer's checkpoints too.
  locked := a2_lock_session(s);
  select boundary.clear_index, head.up_to_index into ci, head_index
    from (select coalesce((select clear_index from a2_clears where session_id = s), 0)
            as clear_index) boundary
    left join lateral (
      select up_to_index from a2_snapshots
       where session_id = s and reducer_name = reducer
       for update
    ) head on true;
  -- A fold from before the latest clear describes a lifetime that is gone.
  select coalesce(jsonb_agg(jsonb_build_object('index', w.up_to_index,
                                                'state', write_states->(w.ord::integer - 1))
                            order by w.up_to_index), '[]')
    into writes
    from unnest(write_indexes) with ordinality as w(up_to_index, ord)
   where w.up_to_index >= ci;
  if jsonb_array_length(writes) = 0 then
    return;
  end if;
  if head_index < ci then
    head_index := null;  -- A stale head counts as absent.
  end if;

  -- Pins on unfinished events of this lifetime; the event rows are locked, serializing with
  -- completions and dead-lettering that release pins.
  with requested as (
    select pin.up_to_index, pin.event_index
      from unnest(pin_checkpoints, pin_events) as pin(up_to_index, event_index)
     where pin.up_to_index >= ci
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
end $$;

-- clear. if_last: the conditional clear's expected head, or null; cause_index/cause_attempt:
-- the clearing handler's attempt, or null. marker_type is the store's clear_event_type option
-- (null: 'a2.clear'), the one setting that must match the TypeScript services sharing the
-- database. Returns r_cleared, r_index (the head after) and r_clear_index.
create or replace function a2_clear(s text, now_ms bigint, if_last bigint, cause_index bigint,
                                    cause_attempt bigint, marker_id text, marker_type text,
                                    out r_cleared boolean, out r_index bigint,
                                    out r_clear_index bigint)
language plpgsql as $$
declare
  locked boolean;  -- a2_lock_session
  owed text;
  has_cause boolean := cause_index is not null;
  head bigint;
  ci bigint;
  marker bigint;
  parent record;
  v_constraint text;
begin
  locked := a2_lock_session(s);
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
    r_cleared := true; r_index := head; r_clear_index := ci;
    return;
  end if;
  if if_last is not null and if_last <> head then
    r_cleared := false; r_index := head; r_clear_index := ci;
    return;
  end if;
  if head = 0 or ci = head then
    r_cleared := true; r_index := head; r_clear_index := ci;
    return;
  end if;
  marker := head + 1;
  begin
    insert into a2_events (session_id, idx, event_id, event_type, payload, created_at, cause,
                           lane, lane_ready, processed_at)
    values (s, marker, marker_id, coalesce(marker_type, 'a2.clear'), 'null'::jsonb, now_ms, null, null,
            true, now_ms);
  exception when unique_violation then
    get stacked diagnostics v_constraint = constraint_name;
    if v_constraint = 'a2_events_event_id_key' then
      -- Q14: any row holding the id blocks the marker, even a stale one of this session.
      perform a2_duplicate('marker_id_taken', jsonb_build_object('id', marker_id),
        format('the clear marker id ''%s'' already exists', marker_id));
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
  -- Work index: the new lifetime has no work yet.
  delete from a2_work where session_id = s;
  owed := a2_owe_wake(s, true, false);
  r_cleared := true; r_index := marker; r_clear_index := marker;
end $$;

-- reclaim. batch_size: rows deleted at most. Returns r_deleted and r_done. Rows other work holds
-- are skipped, never waited on, so deletion cannot join a deadlock; a later call takes them.
create or replace function a2_reclaim(s text, batch_size bigint, out r_deleted bigint,
                                      out r_done boolean)
language plpgsql as $$
declare
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
     limit batch_size
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
    r_deleted := 0; r_done := true;
    return;
  end if;
  if deleted > 0 then
    r_deleted := deleted; r_done := false;
    return;
  end if;
  if (select idx from a2_events where session_id = s and idx < ci order by idx limit 1)
     is not null then
    r_deleted := 0; r_done := false;
    return;
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
  r_deleted := 0; r_done := skipped = 0;
end $$;

-- patch_presence. new_state JSON null (or SQL null) removes the participant. Returns the live
-- map as jsonb.
create or replace function a2_patch_presence(s text, new_participant text, new_state jsonb,
                                             ttl_ms bigint, now_ms bigint, new_source text)
returns jsonb language plpgsql as $$
begin
  delete from a2_presence where ns = s and expires_at <= now_ms;
  if new_state is null or jsonb_typeof(new_state) = 'null' then
    delete from a2_presence where ns = s and participant = new_participant;
  else
    insert into a2_presence (ns, participant, state, source, expires_at)
    values (s, new_participant, new_state, new_source, now_ms + ttl_ms)
    on conflict (ns, participant) do update
      set state = excluded.state, source = excluded.source, expires_at = excluded.expires_at;
  end if;
  return coalesce((select jsonb_object_agg(participant, state) from a2_presence
                    where ns = s and expires_at > now_ms), '{}'::jsonb);
end $$;

-- sweep_work (an a2 extension): one pass of the safety sweep. For every session with ready
-- events of the current lifetime (read through the partial index a2_events_pending, so its
-- cost follows unfinished work, not history), the earliest time one can be claimed (a held
-- event: its lease end; a delayed one: its available_at; any other: now_ms), as the claim's
-- busy time reads it; lowers the session's a2_work entry to it when missing or later. Returns
-- the entries it added or moved. Sessions are written in session order, so two sweeps at once
-- lock a2_work rows in one order.
create or replace function a2_sweep_work(now_ms bigint)
returns table (r_session_id text, r_at bigint) language plpgsql as $$
begin
  return query
  with due as (
    select e.session_id,
           min(a2_ready_at(e.claim_expires_at, e.available_at, now_ms)) as at
      from a2_events e
     where e.processed_at is null
       and e.failed_at is null
       and e.lane_ready
       and e.idx > coalesce((select c.clear_index from a2_clears c
                              where c.session_id = e.session_id), 0)
     group by e.session_id
  )
  insert into a2_work as w (session_id, next_at)
  select due.session_id, due.at from due order by due.session_id
  on conflict (session_id) do update set next_at = excluded.next_at
   where excluded.next_at < w.next_at
  returning w.session_id, w.next_at;
end $$;
