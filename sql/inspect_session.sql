-- SPDX-License-Identifier: MIT
-- inspect_session: one row of the session's counts (a2_session_counts), its lanes with
-- unfinished work [[lane, head index, pending]], its recorded claims [[index, attempt, holder,
-- expires at]] (pending, not dead, a holder set) and its reducers' newest checkpoints of the
-- current lifetime [[reducer, index, history below it]], the lists as JSON text. Reads only the
-- unfinished rows above the boundary (a2_events_pending) and the session's checkpoints.
-- $1 session  $2 now (ms)
with c as (
  select * from a2_session_counts($1::text, $2::bigint)
), p as (
  select e.idx, nullif(e.lane, '') as lane, e.failed_at, e.claim_holder, e.claim_expires_at,
         e.attempt_count
    from a2_events e
   where e.session_id = $1::text and e.processed_at is null
     and e.idx > (select c.r_clear_index from c)
)
select c.r_head as head, c.r_clear_index as clear_index, c.r_pending as pending,
       c.r_ready as ready, c.r_claimed as claimed, c.r_dead as dead,
       (select coalesce(jsonb_agg(jsonb_build_array(l.lane, l.head_index, l.pending)), '[]')
          from (select p.lane, min(p.idx) as head_index,
                       count(*) filter (where p.failed_at is null) as pending
                  from p where p.lane is not null group by p.lane) l)::text as lanes,
       (select coalesce(jsonb_agg(jsonb_build_array(p.idx, p.attempt_count, p.claim_holder,
                                                    coalesce(p.claim_expires_at, 0))
                                  order by p.idx), '[]')
          from p where p.failed_at is null and p.claim_holder is not null)::text as claims,
       (select coalesce(jsonb_agg(jsonb_build_array(
                 s.reducer_name, s.up_to_index,
                 (select count(*) from a2_snapshot_history h
                   where h.session_id = $1::text and h.reducer_name = s.reducer_name
                     and h.up_to_index >= c.r_clear_index and h.up_to_index < s.up_to_index))),
               '[]')
          from a2_snapshots s
         where s.session_id = $1::text and s.up_to_index >= c.r_clear_index)::text as snapshots
  from c
