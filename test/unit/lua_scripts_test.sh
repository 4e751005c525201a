#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Loads every composed Lua script into a real redis-server, checks that the SHA1 Redis returns is
# the generated one, and exercises append / claim / renew / complete / fail / dead letters /
# redrive / snapshots / clear / reclaim / presence / release / held claims / batched completion
# and claim_next with EVALSHA using the KEYS/ARGV layouts of
# docs/redis-layout.md#scripts, checking replies and the stored keys (docs/redis-layout.md#keys).
#
# Usage: lua_scripts_test.sh <source root> [port]
# Composes every <source root>/lua/*.lua exactly as the build embeds it (cmake -P
# cmake/a2_embed_file.cmake in compose mode), starts its own redis-server (on [port], else on a
# free port) in a temporary directory and stops it by pid on exit. Needs cmake, redis-server,
# redis-cli and sha1sum. Exits non-zero on any failed check.
set -euo pipefail

root=$(cd "$1" && pwd)
tmp=$(mktemp -d)
server=
cleanup() {
  if [[ -n "$server" ]]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

dir=$tmp/scripts
mkdir -p "$dir"
: >"$dir/sha1.txt"
for file in "$root"/lua/*.lua; do
  name=$(basename "$file" .lua)
  cmake -DA2_EMBED_COMPOSE="$file" -DA2_EMBED_search_dir="$root/lua" \
    -DA2_EMBED_DUMP="$dir/$name.lua" \
    -P "$root/cmake/a2_embed_file.cmake"
  echo "$name $(sha1sum <"$dir/$name.lua" | cut -d' ' -f1)" >>"$dir/sha1.txt"
done

start_server() {
  local candidate=$1
  redis-cli -p "$candidate" ping >/dev/null 2>&1 && return 1  # In use.
  redis-server --port "$candidate" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" \
    >"$tmp/server.log" 2>&1 &
  server=$!
  for _ in $(seq 50); do
    if redis-cli -p "$candidate" ping >/dev/null 2>&1; then port=$candidate; return 0; fi
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  server=
  return 1
}
port=
if [[ $# -ge 2 ]]; then
  start_server "$2" || { echo "cannot start redis-server on port $2"; exit 1; }
else
  for _ in 1 2 3 4 5 6 7 8; do
    start_server $((20000 + RANDOM % 20000)) && break
  done
  [[ -n "$port" ]] || { echo "cannot start redis-server"; exit 1; }
fi

cli() { redis-cli -p "$port" "$@"; }
failures=0
checks=0
# expect <description> <expected, lines joined by |> <actual command...>
expect() {
  local what=$1 want=$2
  shift 2
  local got
  got=$("$@" 2>&1 | tr '\n' '|')
  got=${got%|}
  checks=$((checks + 1))
  if [[ "$got" != "$want" ]]; then
    echo "FAIL: $what"
    echo "  want: $want"
    echo "  got:  $got"
    failures=$((failures + 1))
  fi
}

declare -A sha
while read -r name digest; do
  loaded=$(cli -x SCRIPT LOAD <"$dir/$name.lua")
  expect "SCRIPT LOAD $name returns the generated sha1" "$digest" echo "$loaded"
  sha[$name]=$digest
done <"$dir/sha1.txt"

P=p
S=s
k() { echo "$P:$S:$1"; }
idk() { echo "$P:ids:\"$1\""; }
# The scripts that keep the work index take p:work as their last KEYS entry
# (docs/redis-layout.md#work-index): ev adds it after the keys the call lists.
ev() {
  local name=$1 n=$2
  shift 2
  case $name in
    append | claim_available | complete_attempt | complete_attempts | fail_attempt | \
      release_claims | renew_claims | redrive | clear)
      cli EVALSHA "${sha[$name]}" $((n + 1)) "${@:1:n}" "$P:work" "${@:n+1}" ;;
    *) cli EVALSHA "${sha[$name]}" "$n" "$@" ;;
  esac
}
base_keys() { echo "$(k log) $(k count) $(k meta) $(k pending) $(k ready) $(k meta-split)"; }

# --- append ----------------------------------------------------------------------------------
expect "append of nothing" "empty|0" ev append 6 $(base_keys) $S 1000 0 "$(k notify)" ''
redis-cli -p "$port" SUBSCRIBE "$(k notify)" >"$tmp/wake" &
subscriber=$!
sleep 0.3
expect "append two events" "ok|1|1" \
  ev append 8 $(base_keys) "$(idk g1)" "$(idk g2)" $S 1000 2 \
  g1 t '{"a":1}' '' L 0 '' \
  g2 t '[1, 2]' '' '' 0 '' \
  "$(k notify)" ''
sleep 0.3
kill "$subscriber"; wait "$subscriber" 2>/dev/null || true
expect "wake-up message" 'subscribe|p:s:notify|1|message|p:s:notify|{"f":2,"t":1000,"e":[[1,"g1","t",{"a":1}],[2,"g2","t",[1, 2]]]}' cat "$tmp/wake"
expect "count" "2" cli GET "$(k count)"
expect "the work index lists the session from now" "s|1000" cli ZRANGE "$P:work" 0 -1 WITHSCORES
expect "split stored as 0 by the first write" "0" cli GET "$(k meta-split)"
expect "log entry 1" '1-0|id|g1|type|t|payload|{"a":1}|created_at|1000|cause||lane|L' cli XRANGE "$(k log)" 1-0 1-0
expect "owner record" '["s",1]' cli GET "$(idk g1)"
expect "chunk 0 holds the lane copy" "L" cli HGET "$(k meta):0" 1:l
expect "no lane copy for an unlaned event" "" cli HGET "$(k meta):0" 2:l
expect "base hash holds only lane pointers" "__lane:1:L:head|1|__lane:1:L:tail|1" cli HGETALL "$(k meta)"
expect "pending" "1|2" cli ZRANGE "$(k pending)" 0 -1
expect "ready" "1|2" cli ZRANGE "$(k ready)" 0 -1
expect "append a lane follower" "ok|3|1" \
  ev append 7 $(base_keys) "$(idk g3)" $S 1000 1 g3 t null '' L 0 '' "$(k notify)" ''
expect "follower linked" "3" cli HGET "$(k meta):0" 1:next
expect "lane tail moved" "1|3" cli HMGET "$(k meta)" __lane:1:L:head __lane:1:L:tail
expect "follower not ready" "1|2" cli ZRANGE "$(k ready)" 0 -1
# A replay answers its rows: entry and the 14 columns (all unset here) of each id, in batch order.
expect "replay" 'rows|1|1-0|id|g1|type|t|payload|{"a":1}|created_at|1000|cause||lane|L|||||||||||||||2-0|id|g2|type|t|payload|[1, 2]|created_at|1000|cause||lane|||||||||||||||' \
  ev append 8 $(base_keys) "$(idk g1)" "$(idk g2)" $S 1000 2 g1 t 1 '' '' 0 '' g2 t 1 '' '' 0 '' "$(k notify)" ''
expect "partial batch" "partial|1" \
  ev append 8 $(base_keys) "$(idk g1)" "$(idk gx)" $S 1000 2 g1 t 1 '' '' 0 '' gx t 1 '' '' 0 '' "$(k notify)" ''
expect "foreign id" "foreign|g1" \
  ev append 7 p:s2:log p:s2:count p:s2:meta p:s2:pending p:s2:ready p:s2:meta-split "$(idk g1)" \
  s2 1000 1 g1 t 1 '' '' 0 '' p:s2:notify ''
expect "cause above the head" "no_parent|9" \
  ev append 7 $(base_keys) "$(idk g4)" $S 1000 1 g4 t 1 '{"index":9,"attempt":1}' '' 0 '' "$(k notify)" ''
expect "cause with a stale attempt" "superseded|1" \
  ev append 7 $(base_keys) "$(idk g4)" $S 1000 1 g4 t 1 '{"index":1,"attempt":1}' '' 0 '' "$(k notify)" ''
expect "cause index 0" "superseded|0" \
  ev append 7 $(base_keys) "$(idk g4)" $S 1000 1 g4 t 1 '{"index":0,"attempt":0}' '' 0 '' "$(k notify)" ''

# --- claim / renew -----------------------------------------------------------------------------
expect "claim both ready events" \
  'claimed|2|1000|w|2000|0|1-0|g1|t|{"a":1}|1000||L||2-0|g2|t|[1, 2]|1000|||' \
  ev claim_available 6 $(base_keys) w 1000 2000 '' 0
expect "claim metadata" "1|1000|1000|w|2000" cli HMGET "$(k meta):0" 1:d 1:fc 1:lc 1:ch 1:ce
expect "claim while leased" "busy|2000" ev claim_available 6 $(base_keys) w 1500 2500 '' 0
expect "claim excluding the leased events" "settled" ev claim_available 6 $(base_keys) w 1500 2500 '' 2 1 2
expect "renew: live lease, equal attempt" "1|1" \
  ev renew_claims 3 "$(k count)" "$(k meta)" "$(k meta-split)" w 1500 2600 1 1 1
expect "renewed lease" "2600" cli HGET "$(k meta):0" 1:ce
expect "a renewal that extends a lease leaves the entry (the busy claim's retry time)" "2000" \
  cli ZSCORE "$P:work" "$S"
expect "renew: attempt above the stored one is not renewed (Q11)" "0" \
  ev renew_claims 3 "$(k count)" "$(k meta)" "$(k meta-split)" w 1500 2700 1 1 2
expect "renew: older attempt superseded, above the head ignored, live lease renewed" "1|2|1" \
  ev renew_claims 3 "$(k count)" "$(k meta)" "$(k meta-split)" w 1500 2700 3 1 0 2 1 9 1
expect "renew by another holder" "0" \
  ev renew_claims 3 "$(k count)" "$(k meta)" "$(k meta-split)" other 1500 2700 1 2 1
expect "renew: a lease ended sooner" "1|1" \
  ev renew_claims 3 "$(k count)" "$(k meta)" "$(k meta-split)" w 1500 1800 1 1 1
expect "a renewal that ends a lease before the entry lowers it" "1800" cli ZSCORE "$P:work" "$S"
expect "renew: the lease extended again" "1|1" \
  ev renew_claims 3 "$(k count)" "$(k meta)" "$(k meta-split)" w 1500 2600 1 1 1
expect "the entry stays" "1800" cli ZSCORE "$P:work" "$S"

# --- complete ----------------------------------------------------------------------------------
ckeys() { echo "$(k log) $(k count) $(k meta) $(k pending) $(k ready) $(k snapshot-pins:$1) $(k snapshot-pin-counts) $(k meta-split)"; }
expect "complete with a stale attempt" "superseded" ev complete_attempt 8 $(ckeys 1) $S 1600 1 2 0 "$(k notify)" '' '' ''
expect "complete above the head" "missing" ev complete_attempt 8 $(ckeys 9) $S 1600 9 1 0 "$(k notify)" '' '' ''
expect "complete 1 with a child in its lane" "ok|4" \
  ev complete_attempt 9 $(ckeys 1) "$(idk c1)" $S 1600 1 1 1 c1 ct '{"c":true}' L 0 '' "$(k notify)" '' '' ''
expect "parent settled" '1600|1|["c1"]||' cli HMGET "$(k meta):0" 1:p 1:pa 1:ri 1:ch 1:ce
expect "child entry with cause" '4-0|id|c1|type|ct|payload|{"c":true}|created_at|1600|cause|{"index":1,"attempt":1}|lane|L' \
  cli XRANGE "$(k log)" 4-0 4-0
expect "lane handed to the follower, child queued behind it" "3|4" cli HMGET "$(k meta)" __lane:1:L:head __lane:1:L:tail
expect "follower links to the child" "4" cli HGET "$(k meta):0" 3:next
expect "pending after completion" "2|3|4" cli ZRANGE "$(k pending)" 0 -1
expect "ready after completion" "2|3" cli ZRANGE "$(k ready)" 0 -1
expect "count after completion" "4" cli GET "$(k count)"
expect "completion replay" 'rows|4-0|id|c1|type|ct|payload|{"c":true}|created_at|1600|cause|{"index":1,"attempt":1}|lane|L||||||||||||||' \
  ev complete_attempt 9 $(ckeys 1) "$(idk c1)" $S 1700 1 1 1 c1 ct '{"c":true}' L 0 '' "$(k notify)" '' '' ''
expect "completion replay with other ids" "partial" \
  ev complete_attempt 9 $(ckeys 1) "$(idk c2)" $S 1700 1 1 1 c2 ct 1 L 0 '' "$(k notify)" '' '' ''
expect "completion replay with another attempt" "superseded" \
  ev complete_attempt 9 $(ckeys 1) "$(idk c1)" $S 1700 1 2 1 c1 ct 1 L 0 '' "$(k notify)" '' '' ''
# An event whose recorded child ids match but whose child was not written by this attempt:
cli HSET "$(k meta):0" 2:p 1 2:pa 1 2:ri '["c1"]' >/dev/null
expect "completion replay whose child has another cause (Q3)" "partial" \
  ev complete_attempt 9 $(ckeys 2) "$(idk c1)" $S 1700 2 1 1 c1 ct 1 L 0 '' "$(k notify)" '' '' ''
cli HDEL "$(k meta):0" 2:p 2:pa 2:ri >/dev/null

# --- fail / dead letters / redrive -------------------------------------------------------------
fkeys() { echo "$(k count) $(k meta) $(k pending) $(k ready) $(k snapshot-pins:$1) $(k snapshot-pin-counts) $(k meta-split)"; }
expect "fail with a stale attempt" "superseded|0" ev fail_attempt 7 $(fkeys 2) 2 2 boom 3 1800 ''
expect "fail above the head" "missing|0" ev fail_attempt 7 $(fkeys 9) 9 1 boom 3 1800 ''
expect "fail below the limit" "failed|1" ev fail_attempt 7 $(fkeys 2) 2 1 boom 3 1800 ''
expect "failure recorded, claim released" "1|boom|1800|1||" cli HMGET "$(k meta):0" 2:a 2:e 2:lf 2:lfa 2:ch 2:ce
expect "retry of the recorded failure" "failed|1" ev fail_attempt 7 $(fkeys 2) 2 1 boom 3 1800 ''
expect "claim the failed event and the unlaned follower" "claimed|2" sh -c "redis-cli -p $port EVALSHA ${sha[claim_available]} 7 $(base_keys) $P:work w 1900 5000 '' 0 | head -2"
expect "fail reaching the limit" "dead_lettered|2" ev fail_attempt 7 $(fkeys 2) 2 2 boom2 2 2000 ''
expect "dead letter out of ready" "3" cli ZRANGE "$(k ready)" 0 -1
expect "dead letter still pending" "2|3|4" cli ZRANGE "$(k pending)" 0 -1
expect "dead letters" "2-0|id|g2|type|t|payload|[1, 2]|created_at|1000|cause||lane|||||||2000|1000|1900|2000|2|2|2|boom2|" \
  ev dead_letters 5 "$(k log)" "$(k count)" "$(k meta)" "$(k pending)" "$(k meta-split)"
rkeys="$(k count) $(k meta) $(k pending) $(k ready) $(k meta-split)"
expect "redrive a live event" "0|1" ev redrive 5 $rkeys 3 retry 2100
expect "redrive retry" "1|1" ev redrive 5 $rkeys 2 retry 2100
expect "retried: ready, failure fields reset" "2|3||" sh -c "redis-cli -p $port ZRANGE $(k ready) 0 -1; redis-cli -p $port HMGET $(k meta):0 2:f 2:a"

# --- snapshots ----------------------------------------------------------------------------------
skeys() { echo "$(k snap:R) $(k snap-history:R) $(k count) $(k meta) $(k snapshot-pin-counts) $(k meta-split)"; }
expect "put checkpoint 2 pinned to event 3" "1" \
  ev put_snapshots 6 $(skeys) 2100 "$(k snapshot-pins:)" 1 2 '{"index":2,"state":"two","updatedAt":2100,"r":1}' 1 3 R
expect "registry" "R" cli SMEMBERS "$(k snap-reducers)"
expect "pin set" '["p:s:snap-history:R","2"]' cli SMEMBERS "$(k snapshot-pins:3)"
expect "put checkpoint 4 moves the pinned head 2 into history" "1" \
  ev put_snapshots 6 $(skeys) 2200 "$(k snapshot-pins:)" 2 3 '{"index":3,"state":"three","updatedAt":2200,"r":1}' 0 \
  4 '{"index":4,"state":"four","updatedAt":2200,"r":1}' 0 R
expect "history keeps only the pinned checkpoint" '{"index":2,"state":"two","updatedAt":2100,"r":1}|2' \
  cli ZRANGE "$(k snap-history:R)" 0 -1 WITHSCORES
expect "read_state without cap" '4|{"index":4,"state":"four","updatedAt":2200,"r":1}|4|0' \
  ev read_state 3 "$(k snap:R)" "$(k snap-history:R)" "$(k count)" ''
expect "read_state capped at 3" '4|{"index":2,"state":"two","updatedAt":2100,"r":1}|4|0' \
  ev read_state 3 "$(k snap:R)" "$(k snap-history:R)" "$(k count)" 3

# --- clear -------------------------------------------------------------------------------------
clkeys() { echo "$(k log) $(k count) $(k meta) $(k meta-split) $(idk $1) $(k pending) $(k ready)"; }
expect "clear with a lost race" "ok|0|4|0" ev clear 7 $(clkeys m1) $S 3000 2 '' '' m1 "$(k notify)" a2.clear
expect "clear with a stale cause" "superseded|3" ev clear 7 $(clkeys m1) $S 3000 '' 3 5 m1 "$(k notify)" a2.clear
expect "clear with a marker id already owned" "foreign" ev clear 7 $(clkeys g1) $S 3000 '' '' '' g1 "$(k notify)" a2.clear
expect "clear" "ok|1|5|5" ev clear 7 $(clkeys m1) $S 3000 4 '' '' m1 "$(k notify)" a2.clear
expect "marker entry" '5-0|id|m1|type|a2.clear|payload|null|created_at|3000|cause||lane|' cli XRANGE "$(k log)" - +
expect "boundary, count" "5|5" cli MGET "$(k clear)" "$(k count)"
expect "marker processed" "3000" cli HGET "$(k meta):0" 5:p
expect "old log moved" "p:s:cleared:5" cli SMEMBERS "$(k cleared)"
expect "old log length" "4" cli XLEN "$(k cleared:5)"
expect "queues unlinked" "0" cli EXISTS "$(k pending)" "$(k ready)"
expect "clear retry with ifLastIndex" "ok|1|5|5" ev clear 7 $(clkeys m2) $S 3100 4 '' '' m2 "$(k notify)" a2.clear
expect "clear when the marker is the last event" "ok|1|5|5" ev clear 7 $(clkeys m2) $S 3100 '' '' '' m2 "$(k notify)" a2.clear
expect "claim after clear" "settled" ev claim_available 6 $(base_keys) w 3100 5000 '' 0
expect "complete in the old lifetime" "superseded" ev complete_attempt 8 $(ckeys 3) $S 3100 3 1 0 "$(k notify)" '' '' ''
expect "fail in the old lifetime" "cleared|0" ev fail_attempt 7 $(fkeys 3) 3 1 boom 3 3100 ''
expect "renew in the old lifetime" "0|3" ev renew_claims 3 "$(k count)" "$(k meta)" "$(k meta-split)" w 3100 9000 1 3 1
expect "scheduled work from the old lifetime" "cleared|4" \
  ev append 7 $(base_keys) "$(idk g9)" $S 3100 1 g9 t 1 '' '' 0 '' "$(k notify)" 4
expect "same session reuses an old id" "ok|6|1" \
  ev append 7 $(base_keys) "$(idk g1)" $S 3200 1 g1 t 1 '' L 0 '' "$(k notify)" 6
expect "reused id re-pointed" '["s",6]' cli GET "$(idk g1)"
expect "stale lane tail ignored: the new event heads its lane" "6|6" cli HMGET "$(k meta)" __lane:1:L:head __lane:1:L:tail
expect "another session cannot take an old id before reclaim" "foreign|c1" \
  ev append 7 p:s2:log p:s2:count p:s2:meta p:s2:pending p:s2:ready p:s2:meta-split "$(idk c1)" \
  s2 3200 1 c1 t 1 '' '' 0 '' p:s2:notify ''
expect "read_state after clear ignores old checkpoints" '||6|5' \
  ev read_state 3 "$(k snap:R)" "$(k snap-history:R)" "$(k count)" ''

# --- reclaim -----------------------------------------------------------------------------------
expect "reclaim batch" "p:s:cleared:5|1|g1|2|g2|3|g3|4|c1" ev reclaim_batch 1 "$(k count)" 256
expect "reclaim" "4|1" ev reclaim 8 "$(k cleared:5)" "$(k count)" "$(k meta)" "$(k meta-split)" \
  "$(idk g1)" "$(idk g2)" "$(idk g3)" "$(idk c1)" $S "$(k snapshot-pins:)" 4 1 g1 2 g2 3 g3 4 c1
expect "reused id survives" '["s",6]' cli GET "$(idk g1)"
expect "old ids freed" "0" cli EXISTS "$(idk g2)" "$(idk g3)" "$(idk c1)"
expect "no metadata of deleted indexes" "5:p|6:l" sh -c "redis-cli -p $port HKEYS $(k meta):0 | sort"
expect "lane pointers of the new lifetime kept" "__lane:1:L:head|__lane:1:L:tail" sh -c "redis-cli -p $port HKEYS $(k meta) | sort"
expect "moved log and set gone" "0" cli EXISTS "$(k cleared:5)" "$(k cleared)" "$(k snapshot-pins:3)"
expect "checkpoints below the boundary swept" "0" cli EXISTS "$(k snap:R)" "$(k snap-history:R)"
expect "pin counts swept" "" cli HGETALL "$(k snapshot-pin-counts)"
expect "reclaim after done" "" ev reclaim_batch 1 "$(k count)" 256
expect "reclaim of a never-cleared session" "" ev reclaim_batch 1 p:s2:count 256
expect "another session can now take an old id" "ok|1|1" \
  ev append 7 p:s2:log p:s2:count p:s2:meta p:s2:pending p:s2:ready p:s2:meta-split "$(idk c1)" \
  s2 3300 1 c1 t 1 '' '' 0 '' p:s2:notify ''

# --- presence ----------------------------------------------------------------------------------
expect "presence patch" 'p1|{"x": 1.25}' ev presence_patch 1 "$(k presence)" 1000 p1 '{"x": 1.25}' 2000 src
expect "presence value" '{"state":{"x": 1.25},"expiresAt":2000,"source":"src"}' cli HGET "$(k presence)" p1
expect "presence second participant" 'a0|"s,\"expiresAt\":1"|p1|{"x": 1.25}' \
  ev presence_patch 1 "$(k presence)" 1500 a0 '"s,\"expiresAt\":1"' 9000 src
expect "presence read before expiry" 'a0|"s,\"expiresAt\":1"|p1|{"x": 1.25}' ev presence_read 1 "$(k presence)" 1999
expect "presence read at expiry" 'a0|"s,\"expiresAt\":1"' ev presence_read 1 "$(k presence)" 2000
expect "presence pruned" "a0" cli HKEYS "$(k presence)"
expect "presence removal" "" ev presence_patch 1 "$(k presence)" 2100 a0 '' '' src

# --- metadata chunks and slicing: 1001 events in one append ----------------------------------
S=big
keys=() args=()
for i in $(seq 1001); do
  keys+=("$(idk b$i)")
  settled=0
  [[ $i -eq 1001 ]] && settled=1
  args+=("b$i" t "$i" '' '' "$settled" '')
done
expect "append 1001 events" "ok|1|1" ev append 1007 $(base_keys) "${keys[@]}" $S 4000 1001 "${args[@]}" "$(k notify)" ''
expect "1001 owner records" '["big",1000]|["big",1001]' cli MGET "$(idk b1000)" "$(idk b1001)"
expect "1000 pending, 1000 ready" "1000|1000" sh -c "redis-cli -p $port ZCARD $(k pending); redis-cli -p $port ZCARD $(k ready)"
expect "index 1001 lives in chunk 1" "4000" cli HGET "$(k meta):1" 1001:p
expect "chunk 0 has no field of 1001" "0" cli HLEN "$(k meta):0"
expect "claim 1000 events across one chunk" "claimed|1000" sh -c "redis-cli -p $port EVALSHA ${sha[claim_available]} 7 $(base_keys) $P:work w 4100 9000 '' 0 | head -2"
expect "five claim fields per index in chunk 0" "5000" cli HLEN "$(k meta):0"
expect "claim fields of index 1000" "1|w|9000" cli HMGET "$(k meta):0" 1000:d 1000:ch 1000:ce

# --- a session written before chunking (count without split) -----------------------------------
S=legacy
cli SET "$(k count)" 3 >/dev/null
expect "append to a legacy session" "ok|4|1" ev append 7 $(base_keys) "$(idk l4)" $S 5000 1 l4 t 1 '' Q 0 '' "$(k notify)" ''
expect "split stored as the old count" "3" cli GET "$(k meta-split)"
expect "new metadata in chunk 0" "Q" cli HGET "$(k meta):0" 4:l
expect "legacy index 2 maps to the base hash" "fail-me" sh -c "redis-cli -p $port HSET $(k meta) 2:d 1 2:ch w >/dev/null; redis-cli -p $port EVALSHA ${sha[fail_attempt]} 8 $(k count) $(k meta) $(k pending) $(k ready) $(k snapshot-pins:2) $(k snapshot-pin-counts) $(k meta-split) $P:work 2 1 fail-me 5 5000 '' >/dev/null; redis-cli -p $port HGET $(k meta) 2:e"

# --- redrive skip hands the lane over ---------------------------------------------------------
S=lane
expect "two events in lane Q" "ok|1|1" ev append 8 $(base_keys) "$(idk q1)" "$(idk q2)" $S 6000 2 q1 t 1 '' Q 0 '' q2 t 2 '' Q 0 '' "$(k notify)" ''
expect "claim the lane head only" 'claimed|1|6000|w|7000|0|1-0|q1|t|1|6000||Q|' sh -c "redis-cli -p $port EVALSHA ${sha[claim_available]} 7 $(base_keys) $P:work w 6000 7000 '' 0"
expect "dead-letter the head" "dead_lettered|1" ev fail_attempt 7 $(fkeys 1) 1 1 boom 1 6100 ''
expect "lane blocked behind the dead letter" "settled" ev claim_available 6 $(base_keys) w 6100 7000 '' 0
expect "redrive skip" "1|1" ev redrive 5 "$(k count)" "$(k meta)" "$(k pending)" "$(k ready)" "$(k meta-split)" 1 skip 6200
expect "skipped: processed, failedAt kept" "6200|6100" cli HMGET "$(k meta):0" 1:p 1:f
expect "lane handed to the successor" "2|2" cli HMGET "$(k meta)" __lane:1:Q:head __lane:1:Q:tail
expect "successor ready" "2" cli ZRANGE "$(k ready)" 0 -1
expect "redrive skip again is a no-op" "0|1" ev redrive 5 "$(k count)" "$(k meta)" "$(k pending)" "$(k ready)" "$(k meta-split)" 1 skip 6300

# --- pins released by completion ----------------------------------------------------------------
expect "checkpoint 1 pinned to event 2, head 2" "1" \
  ev put_snapshots 6 $(skeys) 6300 "$(k snapshot-pins:)" 2 1 '{"index":1,"state":1,"updatedAt":6300,"r":1}' 1 2 \
  2 '{"index":2,"state":2,"updatedAt":6300,"r":1}' 0 R
expect "pinned history checkpoint kept" "1" cli ZCOUNT "$(k snap-history:R)" -inf +inf
expect "claim event 2" 'claimed|1|6400|w|9000|0|2-0|q2|t|2|6000||Q|' sh -c "redis-cli -p $port EVALSHA ${sha[claim_available]} 7 $(base_keys) $P:work w 6400 9000 '' 0"
expect "complete event 2 without children" "ok|3" ev complete_attempt 8 $(ckeys 2) $S 6500 2 1 0 "$(k notify)" '' '' ''
expect "pin released: history, count and pin set gone" "0|0|0" sh -c "redis-cli -p $port ZCARD $(k snap-history:R); redis-cli -p $port HLEN $(k snapshot-pin-counts); redis-cli -p $port EXISTS $(k snapshot-pins:2)"
expect "head kept" '{"index":2,"state":2,"updatedAt":6300,"r":1}' cli GET "$(k snap:R)"
expect "lane emptied: pointers deleted" "" cli HGETALL "$(k meta)"
expect "completion without children leaves the count" "2" cli GET "$(k count)"

# --- wake-up overflow ---------------------------------------------------------------------------
S=wake
big=\"$(head -c 40000 /dev/zero | tr '\0' 'x')\"
redis-cli -p "$port" SUBSCRIBE "$(k notify)" >"$tmp/wake2" &
subscriber=$!
sleep 0.3
expect "append an oversized payload" "ok|1|1" ev append 7 $(base_keys) "$(idk w1)" $S 7000 1 w1 t "$big" '' '' 0 '' "$(k notify)" ''
expect "clear of the wake session" "ok|1|2|2" ev clear 7 $(clkeys wm) $S 7100 '' '' '' wm "$(k notify)" a2.clear
sleep 0.3
kill "$subscriber"; wait "$subscriber" 2>/dev/null || true
expect "oversized batch publishes the frontier only; clear publishes its marker" \
  'subscribe|p:wake:notify|1|message|p:wake:notify|{"f":1}|message|p:wake:notify|{"f":2,"t":7100,"e":[[2,"wm","a2.clear",null]]}' cat "$tmp/wake2"

# --- claim of a ready index without a stream entry ------------------------------------------------
S=missing
expect "one event" "ok|1|1" ev append 7 $(base_keys) "$(idk x1)" $S 8000 1 x1 t 1 '' '' 0 '' "$(k notify)" ''
cli ZADD "$(k ready)" 2 2 >/dev/null
expect "missing entry" "missing|2" ev claim_available 6 $(base_keys) w 8000 9000 '' 0
expect "nothing written by the failed claim" "" cli HGET "$(k meta):0" 1:d

# --- work extensions: bounded claims, delays (av), release_claims, held_claims -------------------
S=ext
hkeys() { echo "$(k count) $(k meta) $(k ready) $(k meta-split)"; }
rlkeys() { echo "$(k count) $(k meta) $(k meta-split)"; }
expect "three events, 2 scheduled at 9500" "ok|1|1" ev append 9 $(base_keys) "$(idk y1)" "$(idk y2)" "$(idk y3)" \
  $S 9000 3 y1 t 1 '' '' 0 '' y2 t 2 '' '' 0 9500 y3 t 3 '' '' 0 '' "$(k notify)" ''
expect "av stored for the scheduled event only" "|9500|" cli HMGET "$(k meta):0" 1:av 2:av 3:av
expect "a claim with max 1 takes the lowest" 'claimed|1|9000|w|20000|0|1-0|y1|t|1|9000|||' sh -c "redis-cli -p $port EVALSHA ${sha[claim_available]} 7 $(base_keys) $P:work w 9000 20000 1 0"
expect "a claim with max 5 skips the delayed event" 'claimed|1|9000|v|20000|0|3-0|y3|t|3|9000|||' sh -c "redis-cli -p $port EVALSHA ${sha[claim_available]} 7 $(base_keys) $P:work v 9000 20000 5 0"
expect "the claimed event is 3" "1|v|20000" cli HMGET "$(k meta):0" 3:d 3:ch 3:ce
expect "busy until the delay ends" "busy|9500" ev claim_available 6 $(base_keys) w 9100 20000 '' 0
expect "held claims of w" "1|1|20000" ev held_claims 4 $(hkeys) w 9100
expect "held claims of nobody" "" ev held_claims 4 $(hkeys) nobody 9100
expect "held claims after the lease" "" ev held_claims 4 $(hkeys) w 20000
expect "release: w's lease of 1 released; wrong holder, wrong attempt, above the head not held" "1|1|3|7" \
  ev release_claims 3 $(rlkeys) w 9100 '' 4 3 1 1 1 7 1 1 2
expect "released: no lease, attempt kept, no av" "||1|" cli HMGET "$(k meta):0" 1:ch 1:ce 1:d 1:av
expect "release again: not held" "0|1" ev release_claims 3 $(rlkeys) w 9100 '' 1 1 1
expect "a delayed retry stores av" "failed|1" ev fail_attempt 7 $(fkeys 3) 3 1 boom 3 9200 12000
expect "retry av, lease gone" "12000||" cli HMGET "$(k meta):0" 3:av 3:ch 3:ce
expect "the released event is claimed again with the next attempt" 'claimed|1|9300|w|20000|0|1-0|y1|t|1|9000|||2|0||9000|||' sh -c "redis-cli -p $port EVALSHA ${sha[claim_available]} 7 $(base_keys) $P:work w 9300 20000 '' 0"
expect "then busy until 9500" "busy|9500" ev claim_available 6 $(base_keys) w 9300 20000 '' 0
expect "claim at 12000 takes 2 and 3" "claimed|2" sh -c "redis-cli -p $port EVALSHA ${sha[claim_available]} 7 $(base_keys) $P:work w 12000 30000 '' 0 | head -2"
expect "a failure without a retry deletes av" "failed|2" ev fail_attempt 7 $(fkeys 3) 3 2 boom 3 12100 ''
expect "av deleted" "" cli HGET "$(k meta):0" 3:av

# --- release_claims with availableAt (a snooze) ------------------------------------------------
S=snz
expect "one event" "ok|1|1" ev append 7 $(base_keys) "$(idk z1)" $S 20000 1 z1 t 1 '' '' 0 '' "$(k notify)" ''
expect "claimed by w" 'claimed|1|20000|w|50000|0|1-0|z1|t|1|20000|||' sh -c "redis-cli -p $port EVALSHA ${sha[claim_available]} 7 $(base_keys) $P:work w 20000 50000 '' 0"
expect "the entry is the lease end" "50000" cli ZSCORE "$P:work" $S
expect "a wrong attempt is not held and stores nothing" "0|1" ev release_claims 3 $(rlkeys) w 20100 25000 1 1 2
expect "nothing stored" "|w|50000" cli HMGET "$(k meta):0" 1:av 1:ch 1:ce
expect "the entry stays" "50000" cli ZSCORE "$P:work" $S
expect "snooze: released" "1|1" ev release_claims 3 $(rlkeys) w 20100 25000 1 1 1
expect "snoozed: av stored, lease gone, attempt kept, no failure" "25000|||1|" cli HMGET "$(k meta):0" 1:av 1:ch 1:ce 1:d 1:a
expect "the entry is lowered to the snooze time" "25000" cli ZSCORE "$P:work" $S
expect "busy until the snooze ends" "busy|25000" ev claim_available 6 $(base_keys) w 20200 50000 '' 0
expect "claimed at 25000 as attempt 2" 'claimed|1|25000|w|60000|0|1-0|z1|t|1|20000|||2|0||20000|||25000' sh -c "redis-cli -p $port EVALSHA ${sha[claim_available]} 7 $(base_keys) $P:work w 25000 60000 '' 0"
expect "a release without a time keeps the stored av" "1|1" ev release_claims 3 $(rlkeys) w 25100 '' 1 1 2
expect "av kept, lease gone" "25000||" cli HMGET "$(k meta):0" 1:av 1:ch 1:ce
expect "the entry is lowered to now" "25100" cli ZSCORE "$P:work" $S

# --- batched completion (complete_attempts.lua) and claim_next ------------------------------------
S=batch
bkeys() { echo "$(k log) $(k count) $(k meta) $(k pending) $(k ready) $(k snapshot-pin-counts) $(k meta-split)"; }
expect "four events" "ok|1|1" ev append 10 $(base_keys) "$(idk bb1)" "$(idk bb2)" "$(idk bb3)" "$(idk bb4)" \
  $S 10000 4 bb1 t 1 '' '' 0 '' bb2 t 2 '' '' 0 '' bb3 t 3 '' '' 0 '' bb4 t 4 '' '' 0 '' "$(k notify)" ''
expect "claim 1 and 2" "claimed|2" sh -c "redis-cli -p $port EVALSHA ${sha[claim_available]} 7 $(base_keys) $P:work w 10000 20000 2 0 | head -2"
expect "an index above the head after a valid completion fails the call" "missing|2" \
  ev complete_attempts 10 $(bkeys) $(k snapshot-pins:1) $(k snapshot-pins:9) "$(idk bbn)" \
  $S 10050 2 1 1 1 1 bbn ct 1 '' 0 '' 9 1 0 "$(k notify)" w 30000 1
expect "a taken child id fails the call" "partial|2|bb4" \
  ev complete_attempts 11 $(bkeys) $(k snapshot-pins:1) $(k snapshot-pins:2) "$(idk bbn)" "$(idk bb4)" \
  $S 10050 2 2 1 1 1 bbn ct 1 '' 0 '' 2 1 1 bb4 ct 1 '' 0 '' "$(k notify)" w 30000 1
expect "nothing changed by the failed calls" "4|0|||w|w" sh -c "redis-cli -p $port GET $(k count); redis-cli -p $port EXISTS $(idk bbn); redis-cli -p $port HMGET $(k meta):0 1:p 2:p 1:ch 2:ch" 
expect "complete 1 (child bbc1) and 2, then claim next for w" 'done|ok|5|ok|6|claimed|1|10100|w|30000|0|3-0|bb3|t|3|10000|||' \
  sh -c "redis-cli -p $port EVALSHA ${sha[complete_attempts]} 11 $(bkeys) $(k snapshot-pins:1) $(k snapshot-pins:2) '$(idk bbc1)' $P:work $S 10100 2 1 1 1 1 bbc1 ct 1 '' 0 '' 2 1 0 '$(k notify)' w 30000 1"
expect "parents settled" '10100|1|["bbc1"]|10100|1|[]||' cli HMGET "$(k meta):0" 1:p 1:pa 1:ri 2:p 2:pa 2:ri 1:ch 2:ch
expect "child of 1 at 5 with its cause" '5-0|id|bbc1|type|ct|payload|1|created_at|10100|cause|{"index":1,"attempt":1}|lane|' \
  cli XRANGE "$(k log)" 5-0 5-0
expect "count after the batch" "5" cli GET "$(k count)"
expect "pending and ready after the batch" "3|4|5|3|4|5" sh -c "redis-cli -p $port ZRANGE $(k pending) 0 -1; redis-cli -p $port ZRANGE $(k ready) 0 -1"
expect "3 claimed by claim_next" "1|w|30000" cli HMGET "$(k meta):0" 3:d 3:ch 3:ce
expect "a retry replays (with its rows) without a claim" "done|rows|5-0|id|bbc1" \
  sh -c "redis-cli -p $port EVALSHA ${sha[complete_attempts]} 11 $(bkeys) $(k snapshot-pins:1) $(k snapshot-pins:2) '$(idk bbc1)' $P:work $S 10200 2 1 1 1 1 bbc1 ct 1 '' 0 '' 2 1 0 '$(k notify)' '' '' '' | head -5"
expect "the child's row in the replay: 14 columns, unclaimed" "|||||||||||||" \
  sh -c "redis-cli -p $port EVALSHA ${sha[complete_attempts]} 11 $(bkeys) $(k snapshot-pins:1) $(k snapshot-pins:2) '$(idk bbc1)' $P:work $S 10200 2 1 1 1 1 bbc1 ct 1 '' 0 '' 2 1 0 '$(k notify)' '' '' '' | sed -n '16,29p'"
expect "the replay of 2 (no children) and no claim" "rows|" \
  sh -c "redis-cli -p $port EVALSHA ${sha[complete_attempts]} 11 $(bkeys) $(k snapshot-pins:1) $(k snapshot-pins:2) '$(idk bbc1)' $P:work $S 10200 2 1 1 1 1 bbc1 ct 1 '' 0 '' 2 1 0 '$(k notify)' '' '' '' | tail -2"
expect "a replay that does not match fails the call" "partial|1" \
  ev complete_attempts 8 $(bkeys) $(k snapshot-pins:1) $S 10200 1 0 1 1 0 "$(k notify)" '' '' ''
expect "a batch of nothing with claim_next is a bounded claim" 'done||claimed|1|10300|v|30000|0|4-0|bb4|t|4|10000|||' \
  sh -c "redis-cli -p $port EVALSHA ${sha[complete_attempts]} 8 $(bkeys) $P:work $S 10300 0 0 '$(k notify)' v 30000 1"
expect "4 claimed by v" "v" cli HGET "$(k meta):0" 4:ch
expect "complete_attempt with claim_next takes the next two" 'ok|6|claimed|1|10400|w|40000|0|5-0|bbc1|ct|1|10100|{"index":1,"attempt":1}||' \
  sh -c "redis-cli -p $port EVALSHA ${sha[complete_attempt]} 9 $(ckeys 3) $P:work $S 10400 3 1 0 '$(k notify)' w 40000 2"
expect "then busy until the leases end" "superseded|busy|30000" \
  ev complete_attempt 8 $(ckeys 3) $S 10500 3 2 0 "$(k notify)" w 40000 2
expect "an error claims nothing" "missing" \
  ev complete_attempt 8 $(ckeys 9) $S 10500 9 1 0 "$(k notify)" w 40000 2
expect "a replay with claim_next carries its rows, read before the claim" "done|rows|5-0|id|bbc1" \
  sh -c "redis-cli -p $port EVALSHA ${sha[complete_attempts]} 11 $(bkeys) $(k snapshot-pins:1) $(k snapshot-pins:2) '$(idk bbc1)' $P:work $S 10600 2 1 1 1 1 bbc1 ct 1 '' 0 '' 2 1 0 '$(k notify)' w 40000 1 | head -5"
expect "then its claim is busy" "busy|30000" \
  sh -c "redis-cli -p $port EVALSHA ${sha[complete_attempts]} 11 $(bkeys) $(k snapshot-pins:1) $(k snapshot-pins:2) '$(idk bbc1)' $P:work $S 10600 2 1 1 1 1 bbc1 ct 1 '' 0 '' 2 1 0 '$(k notify)' w 40000 1 | tail -2"

expect "a replay listed after the completion of its child shows the child completed (its row at its place)" \
  'done|ok|6|rows|5-0|id|bbc1|type|ct|payload|1|created_at|10100|cause|{"index":1,"attempt":1}|lane||10700|1|[]||||10400|10400|||1||||' \
  sh -c "redis-cli -p $port EVALSHA ${sha[complete_attempts]} 11 $(bkeys) $(k snapshot-pins:5) $(k snapshot-pins:1) '$(idk bbc1)' $P:work $S 10700 2 1 5 1 0 1 1 1 bbc1 ct 1 '' 0 '' '$(k notify)' '' '' ''"

echo "$checks checks, $failures failures"
[[ $failures -eq 0 ]]
