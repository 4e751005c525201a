-- SPDX-License-Identifier: MIT
-- read_states (and read_state): one statement for many sessions of one reducer
-- (docs/semantics.md#read_state, docs/postgres-layout.md#statements). Per request one header row
-- (row_order 0: head index, snapshot, boundary) and its event rows (row_order 1), ordered by
-- position, row_order, idx. Columns 7.. are the public event columns of src/postgres/rows.hpp.
-- $1 jsonb array of {position, s, through, snap}  $2 reducer
with request as materialized (
  select r.position, r.s as session_id, r.through as through_index,
         coalesce(r.snap, r.through) as cap
    from jsonb_to_recordset($1::jsonb) as r(position integer, s text, through bigint, snap bigint)
), bounded as materialized (
  select request.*, coalesce(clears.clear_index, 0) as clear_index
    from request
    left join a2_clears clears on clears.session_id = request.session_id
), selected as materialized (
  select request.position,
         request.session_id,
         request.through_index,
         request.clear_index,
         head.up_to_index as head_index,
         candidate.up_to_index as snapshot_index,
         candidate.state as snapshot_state
    from bounded request
    left join a2_snapshots head
      on head.session_id = request.session_id
     and head.reducer_name = $2
     and head.up_to_index >= request.clear_index
    left join lateral (
      select up_to_index, state from (
        select head.up_to_index, head.state
         where head.up_to_index is not null
           and (request.cap is null or head.up_to_index <= request.cap)
        union all
        select history.up_to_index, history.state
          from a2_snapshot_history history
         where history.session_id = request.session_id
           and history.reducer_name = $2
           and history.up_to_index >= request.clear_index
           and (request.cap is null or history.up_to_index <= request.cap)
      ) candidates
      order by up_to_index desc
      limit 1
    ) candidate on true
)
select selected.position, 0 as row_order, selected.head_index, selected.snapshot_index,
       selected.snapshot_state::text as snapshot_state, selected.clear_index,
       selected.session_id, null::bigint as idx, null::text as event_id,
       null::text as event_type, null::text as payload, null::bigint as created_at
  from selected
union all
select selected.position, 1 as row_order, selected.head_index, null::bigint, null::text,
       selected.clear_index, event.session_id, event.idx, event.event_id, event.event_type,
       event.payload::text, event.created_at
  from selected
  join a2_events event on event.session_id = selected.session_id
 where event.idx > greatest(coalesce(selected.snapshot_index, 0), selected.clear_index - 1)
   and (selected.through_index is null or event.idx <= selected.through_index)
 order by 1, 2, 8
