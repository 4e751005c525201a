// SPDX-License-Identifier: MIT
// a2_redis_bench: throughput, latency and per-operation server cost of the Redis backend, with
// redis-benchmark running a minimal EVALSHA (one XADD + one HSET) as the ceiling.
//
//   a2_redis_bench [--url redis://host:port] [--scale F] [--only SECTION[,SECTION...]]
//
// Sections (all by default): suite (operations and growth), ceiling (redis-benchmark ceiling and
// layout floor), commands (server time by command), discovery (work discovery growth), claim5k
// (one claim of 5,000 ready events), writes (16 threads' writes with and without the write
// connections, and the callers' own round trips), spin (the store option spin_wait), listpack
// (small sessions' metadata hashes as listpacks and as hash tables; it changes a server setting, so
// only without --url), history (appends on servers holding 1.5M and 2.1M events against an empty
// one; servers of its own, so only without --url). The script-text check always runs; the targets
// table shows the rows of the sections that ran.
//
// Without --url it starts its own redis-server (PATH, free port, temp dir, no persistence). A
// server given by --url should be one for benchmarks alone, used in database 0 (the number in
// the URL reaches the store, not the bench's own connections). When it allows DEBUG from local
// connections, the bench makes its keyspace's hash table steady before the blocks it compares
// (bench/redis_keyspace.hpp), with temporary keys a2bench-pad-* that it deletes at its end;
// otherwise it leaves the table as it finds it and says so beside those tables.
// Prints markdown to stdout (bench/run collects it into bench/RESULTS.md), progress to stderr.

#include <hiredis/hiredis.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_set>
#include <vector>

#include "a2/redis.hpp"
#include "bench_common.hpp"
#include "cpu_placement.hpp"
#include "delay_proxy.hpp"
#include "redis_admin.hpp"
#include "redis_keyspace.hpp"
#include "servers/redis_server.hpp"
#include "spin_section.hpp"
#include "workloads.hpp"

namespace {

using a2::bench::fmt;
using a2::bench::get;
using a2::bench::note;
using a2::bench::percent;
using a2::bench::Table;

using a2::bench::Admin;
using a2::bench::Endpoint;
using a2::bench::parse_url;
using a2::bench::snapshot;

// redis-benchmark's requests per second for one EVALSHA of a script (the ceiling or the floor).
struct Ceiling {
  std::string command;
  double rps = 0;
  double p50_ms = 0;
  int runs = 0;  // redis-benchmark runs merged into this one.
  // Adds a run of the same command and request count (a2::bench::merge_run): ops/s over all the
  // runs, p50 the mean of their medians.
  void merge(const Ceiling& run) {
    command = run.command;
    a2::bench::merge_run(rps, p50_ms, runs, run.rps, run.p50_ms);
  }
};

Ceiling redis_benchmark(const Endpoint& e, const std::string& evalsha_args, int clients,
                        int requests, const std::string& options = "") {
  std::string exe = a2::test::find_program("redis-benchmark", {"/usr/bin", "/usr/local/bin"});
  if (exe.empty()) throw std::runtime_error("redis-benchmark not found on PATH (redis-tools)");
  std::string args = "-h " + e.host + " -p " + std::to_string(e.port) +
                     (e.password.empty() ? "" : " -a " + a2::bench::shell_quote(e.password)) +
                     " -n " + std::to_string(requests) + " -c " + std::to_string(clients) +
                     options + " -q EVALSHA " + evalsha_args;
  Ceiling c;
  c.command = "redis-benchmark " + args;
  std::string out = a2::bench::capture(exe + " " + args + " 2>&1");
  // The last progress update and the summary are separated by '\r'; keep the summary.
  std::smatch match;
  std::regex rps(R"(([0-9.]+) requests per second)");
  std::string::const_iterator from = out.begin();
  while (std::regex_search(from, out.cend(), match, rps)) {
    c.rps = std::stod(match[1]);
    from = match.suffix().first;
  }
  std::regex p50(R"(p50=([0-9.]+) msec)");
  if (std::regex_search(out, match, p50)) c.p50_ms = std::stod(match[1]);
  if (c.rps <= 0) throw std::runtime_error("cannot parse redis-benchmark output:\n" + out);
  return c;
}

// The exact bytes of one command in RESP, from a MONITOR line's quoted arguments.
std::optional<std::size_t> resp_size_of_monitor_line(const std::string& line) {
  auto open = line.find("] \"");
  if (open == std::string::npos) return std::nullopt;
  std::vector<std::string> args;
  std::size_t i = open + 2;
  while (i < line.size()) {
    if (line[i] == ' ') {
      ++i;
      continue;
    }
    if (line[i] != '"') return std::nullopt;
    ++i;
    std::string arg;
    while (i < line.size() && line[i] != '"') {
      if (line[i] == '\\' && i + 1 < line.size()) {
        char n = line[i + 1];
        if (n == 'x' && i + 3 < line.size()) {
          arg += static_cast<char>(std::stoi(line.substr(i + 2, 2), nullptr, 16));
          i += 4;
          continue;
        }
        switch (n) {
          case 'n':
            arg += '\n';
            break;
          case 'r':
            arg += '\r';
            break;
          case 't':
            arg += '\t';
            break;
          case 'a':
            arg += '\a';
            break;
          case 'b':
            arg += '\b';
            break;
          default:
            arg += n;
        }
        i += 2;
        continue;
      }
      arg += line[i++];
    }
    ++i;  // Closing quote.
    args.push_back(arg);
  }
  std::size_t size = 1 + std::to_string(args.size()).size() + 2;
  for (const auto& a : args) size += 1 + std::to_string(a.size()).size() + 2 + a.size() + 2;
  return size;
}

std::size_t file_size_or_zero(const std::string& path) {
  std::error_code ec;
  auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<std::size_t>(n);
}

// ---- One claim of 5,000 ready events: server time of a single large claim_available call
// (every other client waits meanwhile), unbounded, bounded at 5,000 and bounded at 100. ----
struct LargeClaimRow {
  std::string name;
  std::optional<std::int64_t> max_events;
  std::int64_t expected;
  std::vector<double> server_ms;  // `usec` of EVALSHA of the one call, per repetition.
  std::vector<double> client_ms;
  std::vector<double> cpu_ms;  // The server process's CPU time (user + sys) over the call.
  a2::bench::Counters first;   // The commandstats delta of the first repetition.
};

// The server process's CPU time so far (`INFO cpu`: used_cpu_user + used_cpu_sys), in ms.
double server_cpu_ms(Admin& admin) {
  std::string info = admin.command({"INFO", "cpu"});
  double total = 0;
  for (const char* name : {"used_cpu_user:", "used_cpu_sys:"}) {
    auto at = info.find(name);
    if (at == std::string::npos) throw std::runtime_error("INFO cpu lacks " + std::string(name));
    total += std::stod(info.substr(at + std::string(name).size()));
  }
  return total * 1000.0;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Five repetitions: one claim is a single call of about 25 ms, which a moment of the host's
// slowness moves by several ms (3 repetitions gave medians 4-7 ms apart in alternating runs of one
// binary). After each repetition's rows, `after_rows(rep)` runs (the layout floor's repetition),
// so a change of the machine's speed during the section affects a2 and the floor alike.
std::vector<LargeClaimRow> large_claims(a2::Store& store, a2::bench::Meter& meter, Admin& admin,
                                        const std::function<void(int)>& after_rows) {
  constexpr std::int64_t kReady = 5000;
  constexpr int kRepetitions = 5;
  std::vector<LargeClaimRow> rows{{"all (no max_events)", std::nullopt, kReady, {}, {}, {}, {}},
                                  {"max_events = 5000", 5000, kReady, {}, {}, {}, {}},
                                  {"max_events = 100", 100, 100, {}, {}, {}, {}}};
  for (int rep = 0; rep < kRepetitions; ++rep) {
    for (std::size_t r = 0; r < rows.size(); ++r) {
      auto& row = rows[r];
      // A fresh session of 5,000 appended unsettled (ready) events.
      const std::string session = "claim5k-" + std::to_string(r) + "-" + std::to_string(rep);
      for (std::int64_t done = 0; done < kReady; done += 1000)
        (void)store.append(session, a2::bench::events(1000, done, false));
      a2::ClaimResult claim;
      const double cpu0 = server_cpu_ms(admin);
      auto t0 = std::chrono::steady_clock::now();
      auto d = meter.around([&] {
        claim = store.claim_available({.session_id = session,
                                       .holder = "large",
                                       .ttl_ms = 600000,
                                       .expires_at_ms = std::nullopt,
                                       .exclude_indexes = {},
                                       .max_events = row.max_events});
      });
      auto t1 = std::chrono::steady_clock::now();
      row.cpu_ms.push_back(server_cpu_ms(admin) - cpu0);
      if (claim.verdict != a2::ClaimVerdict::claimed ||
          static_cast<std::int64_t>(claim.events.size()) != row.expected)
        throw std::runtime_error("claim of " + session + ": expected " +
                                 std::to_string(row.expected) + " claimed events, got " +
                                 std::string(a2::to_string(claim.verdict)) + " with " +
                                 std::to_string(claim.events.size()));
      if (get(d, "evalsha") != 1)
        throw std::runtime_error("claim of " + session + " ran " + fmt(get(d, "evalsha"), 0) +
                                 " EVALSHA");
      row.server_ms.push_back(get(d, "evalsha_usec") / 1000.0);
      // Client time includes the two INFO snapshots around the call (well under 1 ms).
      row.client_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      if (rep == 0) row.first = d;
    }
    after_rows(rep);
  }
  return rows;
}

// The commands a2's append of one fresh event issues on the seed's layout (docs/redis-layout.md),
// with constant arguments and no logic: KEYS count, meta-split, the id key, log, pending, ready,
// work; ARGV[1] the event id, ARGV[2] the session (its member of the work index). The layout floor
// of the ceiling section and of the growth floor below. Its session's split key (KEYS[2]) is set
// before the calls, as an a2 session stores it at its first write (docs/redis-layout.md, Metadata
// split and chunks), so the MGET finds it as a2's does.
constexpr const char* kAppendFloorScript =
    "redis.call('MGET', KEYS[1], KEYS[2], KEYS[3])\n"
    "local id = redis.call('XADD', KEYS[4], '*', 'id', ARGV[1], 'type', 'bench.event', "
    "'payload', '{\"n\":1,\"text\":\"benchmark event\"}', 'created_at', '1700000000000', "
    "'cause', '', 'lane', '')\n"
    "redis.call('MSET', KEYS[3], '[\"bench-floor\",1]', KEYS[1], '1')\n"
    "redis.call('ZADD', KEYS[5], 1, id)\n"
    "redis.call('ZADD', KEYS[6], 1, id)\n"
    "redis.call('ZADD', KEYS[7], 'LT', 1700000000000, ARGV[2])\n"
    "redis.pcall('PUBLISH', 'bench-floor:notify', '{\"f\":1,\"t\":1700000000000,\"e\":"
    "[[1,\"' .. ARGV[1] .. '\",\"bench.event\",{\"n\":1,\"text\":\"benchmark "
    "event\"}]]}')\n"
    "return { 'ok', '1', '1' }";

// Stores the split key of an append floor session whose keys start with `p` (as "bench-floor:"),
// as an a2 session stores its split at its first write, so the floor's MGET finds it.
void store_floor_split(Admin& admin, const std::string& p) {
  (void)admin.command({"SET", p + "meta-split", "0"});
}

// The cycle's layout floor: the commands of claim_available's and complete_attempt's fast paths
// (one ready event claimed; its completion with one unsettled child) with no logic, on keys of
// their own: what any implementation of the seed's layout issues for one claim + complete cycle.
// The event advances as a2's do: the claim takes index n (ARGV), its fields in the metadata chunk
// of n (`meta:<floor((n - 1) / 1000)>`, so the hash grows to 1000 events' fields as a2's do) and
// its stream entry n-0; the completion writes the child as entry n+1, the next claim's event.
// Arguments are the event's own, built as a2 builds them; replies are constants of the shape of
// a2's (the claim's: lua/lib/claim.lua, a fresh event's row nil).
// Claim: KEYS ready, meta-split, count, clear, meta, log, work; ARGV n.
constexpr const char* kClaimFloorScript =
    "local n = ARGV[1]\n"
    "local meta = KEYS[5] .. ':' .. math.floor((tonumber(n) - 1) / 1000)\n"
    "redis.call('ZRANGE', KEYS[1], 0, 100)\n"
    "redis.call('MGET', KEYS[2], KEYS[3], KEYS[4])\n"
    "redis.call('HMGET', meta, n .. ':ce', n .. ':d', n .. ':fc', n .. ':a', n .. ':e', "
    "n .. ':lf', n .. ':lfa', n .. ':av')\n"
    "local e = redis.call('XRANGE', KEYS[6], n .. '-0', n .. '-0')\n"
    "redis.call('HSET', meta, n .. ':d', '1', n .. ':fc', '1700000000000', n .. ':lc', "
    "'1700000000000', n .. ':ch', 'w', n .. ':ce', '1700000600000')\n"
    "redis.call('ZADD', KEYS[7], '1700000600000', KEYS[1])\n"
    "local v = e[1][2]\n"
    "return { 'claimed', '1', '1700000000000', 'w', '1700000600000', '0', e[1][1], v[2], v[4], "
    "v[6], v[8], v[10], v[12], false }";
// Complete: KEYS count, meta-split, clear, id key, meta, pending, ready, pins of n, log, work;
// ARGV child id, n.
constexpr const char* kCompleteFloorScript =
    "local n = ARGV[2]\n"
    "local c = tostring(tonumber(n) + 1)\n"
    "local meta = KEYS[5] .. ':' .. math.floor((tonumber(n) - 1) / 1000)\n"
    "redis.call('MGET', KEYS[1], KEYS[2], KEYS[3], KEYS[4])\n"
    "redis.call('HMGET', meta, n .. ':d', n .. ':p', n .. ':pa', n .. ':ri', n .. ':ch', "
    "n .. ':f', n .. ':lfa', n .. ':l', n .. ':next')\n"
    "redis.call('HDEL', meta, n .. ':ch', n .. ':ce')\n"
    "redis.call('ZREM', KEYS[6], n)\n"
    "redis.call('ZREM', KEYS[7], n)\n"
    "redis.call('SMEMBERS', KEYS[8])\n"
    "redis.call('XADD', KEYS[9], c .. '-0', 'id', ARGV[1], 'type', 'bench.child', 'payload', "
    "'{\"n\":1,\"text\":\"benchmark event\"}', 'created_at', '1700000000000', 'cause', "
    "'{\"index\":' .. n .. ',\"attempt\":1}', 'lane', '')\n"
    "redis.call('MSET', KEYS[4], '[\"bench-cfloor\",' .. c .. ']', KEYS[1], c)\n"
    "redis.call('ZADD', KEYS[6], c, c)\n"
    "redis.call('ZADD', KEYS[7], c, c)\n"
    "redis.call('HSET', meta, n .. ':p', '1700000000000', n .. ':pa', '1', n .. ':ri', "
    "'[\"' .. ARGV[1] .. '\"]')\n"
    "redis.call('ZADD', KEYS[10], 'LT', 1700000000000, KEYS[6])\n"
    "redis.pcall('PUBLISH', KEYS[9] .. ':notify', '{\"f\":' .. c .. ',\"t\":1700000000000,"
    "\"e\":[[' .. c .. ',\"' .. ARGV[1] .. '\",\"bench.child\",{\"n\":1,\"text\":\"benchmark "
    "event\"}]]}')\n"
    "return { 'ok', c }";

// Runs the cycle's layout floor (the two scripts above) on a connection of its own, keys under
// `prefix` (the work index key `work`, shared when several run at once, as a2's is), the event
// index advancing from 1 with each cycle; drop() deletes the keys.
class CycleFloorCalls {
 public:
  CycleFloorCalls(const Endpoint& endpoint, Admin& admin, std::string prefix = "bench-cfloor:",
                  std::string work = "bench-cfloor:work")
      : client_(endpoint),
        p_(std::move(prefix)),
        work_(std::move(work)),
        claim_(admin.command({"SCRIPT", "LOAD", kClaimFloorScript})),
        complete_(admin.command({"SCRIPT", "LOAD", kCompleteFloorScript})) {
    client_.command({"XADD", p_ + "log", "1-0", "id", "e1", "type", "bench.event", "payload",
                     "{}", "created_at", "1700000000000", "cause", "", "lane", ""});
    client_.command({"ZADD", p_ + "ready", "1", "1"});
    client_.command({"ZADD", p_ + "pending", "1", "1"});
  }
  // One cycle: claims the current event and completes it with the child `child-<i>`.
  void operator()(std::int64_t i) {
    const std::string id = "child-" + std::to_string(i);
    const std::string n = std::to_string(index_++);
    client_.command({"EVALSHA", claim_, "7", p_ + "ready", p_ + "meta-split", p_ + "count",
                     p_ + "clear", p_ + "meta", p_ + "log", work_, n});
    client_.command({"EVALSHA", complete_, "10", p_ + "count", p_ + "meta-split", p_ + "clear",
                     p_ + "ids:" + id, p_ + "meta", p_ + "pending", p_ + "ready",
                     p_ + "snapshot-pins:" + n, p_ + "log", work_, id, n});
  }
  void drop(Admin& admin) {
    for (const char* k : {"log", "ready", "pending", "count"}) admin.command({"DEL", p_ + k});
    admin.command({"DEL", work_});
    admin.delete_matching(p_ + "meta:*");
    admin.delete_matching(p_ + "ids:*");
  }

 private:
  Admin client_;
  std::string p_;
  std::string work_;
  std::string claim_;
  std::string complete_;
  std::int64_t index_ = 1;  // The event the next cycle claims.
};

// The layout floor as sessions grow (a2::bench::GrowthFloor): the append floor script (no logic)
// on the key pattern of the suite's growth rows, so what grows with the number of sessions in
// the layout itself shows apart from a2's code. Server time per call from INFO commandstats.
// The calls go on a connection of their own (the meter's takes the INFO snapshots), session
// s's keys under "bench-gfloor:<s>:".
class GrowthFloorCalls {
 public:
  GrowthFloorCalls(const Endpoint& endpoint, Admin& admin)
      : client_(endpoint), sha_(admin.command({"SCRIPT", "LOAD", kAppendFloorScript})) {}
  void operator()(const std::string& session) {
    const std::string p = "bench-gfloor:" + session + ":";
    // A session's first call (in GrowthFloor's prepare, before any block) stores its split.
    if (seeded_.insert(session).second) store_floor_split(client_, p);
    const std::string id = "gfloor-" + std::to_string(++next_id_);
    client_.command({"EVALSHA", sha_, "7", p + "count", p + "meta-split", p + "ids:" + id,
                     p + "log", p + "pending", p + "ready", "bench-gfloor:work", id, session});
  }

 private:
  Admin client_;
  std::string sha_;
  std::int64_t next_id_ = 0;
  std::unordered_set<std::string> seeded_;  // Sessions whose split is stored.
};

// The layout floor of one claim of 5,000 ready events: a script that issues only the commands
// such a claim must issue on the seed's layout, with no logic beyond building their arguments
// and the reply: ZRANGE of the ready set, one HLEN per metadata chunk (a claim must learn the
// events' leases and delays; fresh chunks are empty, so there is nothing to read), XRANGE of the
// claimed entries, HSET of the five claim fields (d, fc, lc, ch, ce) per event in batches of 100
// events, ZADD of the work index; the reply has the shape of a2's (lua/lib/claim.lua): the
// verdict, count, time, holder, lease end and clear boundary once, then per event its stream
// entry's id and six values and a nil row (a fresh event).
// It assumes what holds for a fresh session: every ready event is claimable and the ready
// indexes are consecutive.
constexpr const char* kLargeClaimFloorScript = R"(local ready = redis.call('ZRANGE', KEYS[1], 0, -1)
local n = #ready
local first, last = tonumber(ready[1]), tonumber(ready[n])
for c = math.floor((first - 1) / 1000), math.floor((last - 1) / 1000) do
  redis.call('HLEN', KEYS[2] .. ':' .. c)
end
local entries = redis.call('XRANGE', KEYS[3], first .. '-0', last .. '-0')
local now, holder, expires = ARGV[1], ARGV[2], ARGV[3]
local reply = { 'claimed', tostring(n), now, holder, expires, '0' }
local k = 6
local writes, chunk = {}, nil
for i = 1, n do
  local f = ready[i]
  local c = math.floor((tonumber(f) - 1) / 1000)
  if chunk ~= nil and (c ~= chunk or #writes == 1000) then
    redis.call('HSET', KEYS[2] .. ':' .. chunk, unpack(writes))
    writes = {}
  end
  chunk = c
  local w = #writes
  writes[w + 1] = f .. ':d'
  writes[w + 2] = '1'
  writes[w + 3] = f .. ':fc'
  writes[w + 4] = now
  writes[w + 5] = f .. ':lc'
  writes[w + 6] = now
  writes[w + 7] = f .. ':ch'
  writes[w + 8] = holder
  writes[w + 9] = f .. ':ce'
  writes[w + 10] = expires
  local e = entries[i]
  local v = e[2]
  reply[k + 1] = e[1]
  reply[k + 2] = v[2]
  reply[k + 3] = v[4]
  reply[k + 4] = v[6]
  reply[k + 5] = v[8]
  reply[k + 6] = v[10]
  reply[k + 7] = v[12]
  reply[k + 8] = false
  k = k + 8
end
redis.call('HSET', KEYS[2] .. ':' .. chunk, unpack(writes))
redis.call('ZADD', KEYS[4], expires, ARGV[4])
return reply)";

// Server time (ms, `usec` of EVALSHA) of the floor script (SCRIPT LOADed as `sha`) on a fresh
// session of 5,000 ready events that the store appended, one session per repetition `rep`.
double large_claim_floor(a2::Store& store, a2::bench::Meter& meter, Admin& admin,
                         const std::string& prefix, const std::string& sha, int rep) {
  constexpr std::int64_t kReady = 5000;
  const std::string session = "claim5k-floor-" + std::to_string(rep);
  for (std::int64_t done = 0; done < kReady; done += 1000)
    (void)store.append(session, a2::bench::events(1000, done, false));
  const std::string p = prefix + ":" + session + ":";
  auto d = meter.around([&] {
    (void)admin.command({"EVALSHA", sha, "4", p + "ready", p + "meta", p + "log", prefix + ":work",
                         "1700000000000", "large", "1700000600000", session});
  });
  if (get(d, "evalsha") != 1 || get(d, "cmd:hset") != kReady / 100)
    throw std::runtime_error("the large claim floor on " + session + " ran " +
                             fmt(get(d, "evalsha"), 0) + " EVALSHA and " +
                             fmt(get(d, "cmd:hset"), 0) + " HSET");
  return get(d, "evalsha_usec") / 1000.0;
}

// Small sessions: claim + complete cycles (the suite's cycle, one unsettled child each) round-robin
// over 1,000 sessions that start with one event, on two key prefixes of their own, one written and
// measured with the server's own hash-max-listpack-entries (Redis's default is 512), one with 32.
// A completed event leaves six fields in its session's hash p:S:meta:0, so with the default the
// hashes stay listpacks (a field lookup scans the list) for the whole run, with 32 they become
// hash tables after about five cycles. The setting is switched before each block and restored
// after, so this runs only on the program's own server.
void small_sessions(const std::function<std::unique_ptr<a2::Store>(const std::string&)>& open,
                    a2::bench::Meter& meter, Admin& admin, const std::string& prefix) {
  constexpr int kSessions = 1000;
  constexpr int kCycles = 20;  // Per session: 6 * kCycles fields of completed events at the end.
  const std::string setting = "hash-max-listpack-entries";
  const std::string server_value = admin.config_get(setting);
  struct Row {
    std::string entries, prefix;
    std::unique_ptr<a2::Store> store;
    a2::bench::Block block;
  };
  std::vector<Row> rows;
  rows.push_back({server_value, prefix + "lp", open(prefix + "lp"), {}});
  rows.push_back({"32", prefix + "ht", open(prefix + "ht"), {}});
  auto session = [](std::int64_t i) { return "small-" + std::to_string(i); };
  auto set = [&](const std::string& value) {
    (void)admin.command({"CONFIG", "SET", setting, value});
  };
  try {
    for (auto& row : rows) {
      set(row.entries);
      for (int i = 0; i < kSessions; ++i) a2::bench::seed_cycle(*row.store, session(i));
    }
    for (int round = 0; round < kCycles; ++round)
      for (auto& row : rows) {
        set(row.entries);
        auto b = meter.measure(1, {std::chrono::minutes(10), kSessions}, [&](int, std::int64_t i) {
          a2::bench::cycle(*row.store, session(i), "small", round * kSessions + i);
        });
        row.block.m.merge(b.m);
        row.block.delta = a2::bench::plus(row.block.delta, b.delta);
      }
  } catch (...) {
    set(server_value);
    throw;
  }
  set(server_value);
  Table t({"hash-max-listpack-entries", "cycles", "cycles/s", "p50 µs",
           "server µs/cycle in EVALSHA", "of which HMGET + HSET + HDEL",
           "p:S:meta:0 at the end: encoding", "its memory per session (KiB)"});
  for (auto& row : rows) {
    double bytes = 0;
    for (int i = 0; i < kSessions; ++i)
      bytes += std::stod(admin.command(
          {"MEMORY", "USAGE", row.prefix + ":" + session(i) + ":meta:0", "SAMPLES", "0"}));
    auto& b = row.block;  // p50_us() sorts the recorded latencies.
    t.add({row.entries + (&row == &rows.front() ? " (the server's)" : ""), std::to_string(b.m.ops),
           fmt(b.m.ops_per_s(), 0), fmt(b.m.latency.p50_us(), 0), fmt(b.per_op("evalsha_usec"), 1),
           fmt(b.per_op("usec:hmget") + b.per_op("usec:hset") + b.per_op("usec:hdel"), 1),
           admin.command({"OBJECT", "ENCODING", row.prefix + ":" + session(0) + ":meta:0"}),
           fmt(bytes / kSessions / 1024, 2)});
  }
  std::cout << "### Small sessions: metadata hashes as listpacks and as hash tables\n\n"
            << "Claim + complete cycles (one unsettled child each, as in Operations) round-robin "
               "over 1,000 sessions that start with one event, one cycle per session per block, "
            << kCycles
            << " interleaved rounds, 1 thread, summed; two key prefixes of their own, one "
               "written and measured with the server's `hash-max-listpack-entries`, one with 32 "
               "(`CONFIG SET` before each block, the server's value restored after). A "
               "completed event leaves six fields in its session's metadata hash, so with "
               "Redis's default (512) every hash of this run stays a listpack, where a field "
               "lookup scans the list, and with 32 it becomes a hash table after about five "
               "cycles (docs/redis-layout.md#small-sessions-and-the-servers-compact-encodings). "
               "Server columns as above; memory: `MEMORY USAGE ... SAMPLES 0` of each session's "
               "`p:S:meta:0` at the end ("
            << kCycles << " completed events and one claimed).\n\n";
  t.print();
}

int run(const a2::bench::Args& args, const std::set<std::string>& only) {
  auto on = [&](const std::string& section) { return only.empty() || only.count(section) > 0; };
  std::unique_ptr<a2::test::RedisServer> server;
  std::string url = args.server;
  if (url.empty()) {
    note("starting redis-server");
    server = std::make_unique<a2::test::RedisServer>(false);
    url = server->url();
  }
  Endpoint endpoint = parse_url(url);
  Admin admin(endpoint);
  std::string version;
  {
    std::string info = admin.command({"INFO", "server"});
    std::smatch m;
    if (std::regex_search(info, m, std::regex(R"(redis_version:([^\r\n]+))"))) version = m[1];
  }
  std::cout << "## Redis backend\n\n"
            << "Server: redis " << version << " at " << (server ? "a private redis-server on " : "")
            << url
            << (server ? " (`--save '' --appendonly no`)"
                       : " (the INFO counters are server-wide: figures are only right on a "
                         "server nobody else is using)")
            << ".\n\n";

  constexpr std::size_t kPool = 16;
  // On a server of the caller's, a prefix of our own (the keys are left behind).
  std::string prefix = server ? "bench" : "a2bench-" + std::to_string(::getpid());
  // Every store of the benchmark: the pool size above and generous timeouts; the other options
  // (write_connections among them) at their defaults.
  auto options_for = [&](const std::string& p) {
    return a2::redis::Options{.url = url,
                              .key_prefix = p,
                              .pool_size = kPool,
                              .connect_timeout = std::chrono::milliseconds(2000),
                              .command_timeout = std::chrono::milliseconds(30000),
                              .clock = nullptr,
                              .ids = nullptr,
                              .feed_safety_poll = std::chrono::milliseconds(1000)};
  };
  auto open_prefix = [&](const std::string& p) { return a2::redis::open(options_for(p)); };
  auto store = open_prefix(prefix);
  a2::bench::Meter meter([&] { return snapshot(admin); });

  // Warm-up: every operation used below runs once (the first use of a script may load it), and
  // the pool opens its connections.
  note("warm-up");
  a2::bench::Counters warm = meter.around([&] {
    a2::bench::seed_cycle(*store, "warmup-cycle");
    for (int i = 0; i < 3; ++i) a2::bench::cycle(*store, "warmup-cycle", "warm", i);
    (void)store->append("warmup", a2::bench::events(10, 0, false));
    (void)store->read("warmup");
    a2::bench::run_threads(
        static_cast<int>(kPool), {std::chrono::milliseconds(300), 20}, [&](int t, std::int64_t) {
          (void)store->append("warmup-" + std::to_string(t), a2::bench::events(1, 0, false));
        });
  });

  a2::bench::SuiteResult suite;
  const bool suite_ran = on("suite");
  GrowthFloorCalls gfloor_calls(endpoint, admin);
  a2::bench::GrowthFloor gfloor(
      meter, args, [] {}, [&](const std::string& session) { gfloor_calls(session); });
  a2::bench::GrowthHooks growth_hooks = gfloor.hooks();
  // The rounds add at most 10 x 3 x (500 appends + 500 children) event ids and the floor's
  // 10 x 1,000 id keys.
  growth_hooks.before_rounds = [&] {
    return "the keyspace's hash table made steady for the rounds' keys "
           "(bench/redis_keyspace.hpp; " +
           a2::bench::settle_keyspace(admin, 100000).describe() + ")";
  };
  if (suite_ran)
    suite = a2::bench::run_suite(
        *store, meter, args,
        {{"round trips/op", "round_trips", 2},
         {"EVALSHA/op", "evalsha", 2},
         {"server µs/op in EVALSHA", "evalsha_usec", 1},
         {"commands/op (incl. in scripts)", "all_calls", 1},
         {"bytes sent/op", "net_in", 0}},
        "The calls that run one script go through the store's write connections "
        "(`write_connections` = 2, the default; Write connections at 16 threads compares 0, "
        "the pool). Server columns are `INFO` deltas over the block divided by its operations, "
        "minus the "
        "cost of the INFO snapshots themselves: round trips/op = `total_reads_processed` (read "
        "events on client sockets: one per request of a client that waits for each reply; a "
        "pipelined batch read at once counts once, so with 16 threads, whose writes share the "
        "write connections, it falls below one: each caller still makes one round trip, as Write "
        "connections at 16 threads counts), EVALSHA/op and the server time spent in them "
        "(`usec`) from `INFO commandstats`, "
        "commands/op counts every command including the `redis.call`s inside scripts (`INFO "
        "commandstats`; Redis 7 also counts those in `total_commands_processed`, so that "
        "counter is not used), bytes sent/op = `total_net_input_bytes` (client to server).",
        growth_hooks);
  auto& blocks = suite.blocks;
  if (suite_ran) {
    std::cout << "### Layout floor as sessions grow (1 thread)\n\n"
                 "The script of the layout floor below (the commands of an append, constant "
                 "arguments, no logic) on the key pattern of the growth rows above, from one "
                 "blocking connection: on one session's keys (1,000 entries written first), and "
                 "round-robin over the keys of 5,000 sessions of 3 entries each, as the 10k-sessions "
                 "appends go; each session's split key is stored at its first call, as a2's "
                 "sessions store theirs at their first write. Its data is written right after "
                 "the suite's sessions, and its "
                 "blocks (at most 500 calls each) run in each of the suite's 10 interleaved "
                 "rounds, summed; server time from INFO commandstats. What grows here grows in "
                 "the layout (the keys of thousands of sessions are cold in the CPU caches), "
                 "whatever the code around it.\n\n";
    gfloor.print("server µs/call in EVALSHA", "evalsha_usec", 2);
  }

  struct Pair {
    Ceiling ceiling;
    double server_us = 0;  // Server time per EVALSHA of the ceiling script.
    Ceiling floor;
    double floor_server_us = 0;
    // The floor script run by `threads` threads, each on its own blocking hiredis connection.
    a2::bench::Block threaded_floor;
    a2::bench::Block ours;
  };
  Pair p1, p16;
  // a2 append 1 / the layout floor with client and server pinned (Placement; 0: not measured).
  double placed_apart = 0, placed_together = 0;
  const bool ceiling_ran = on("ceiling");
  if (ceiling_ran) {
    // ---- The ceiling: redis-benchmark running EVALSHA of a minimal XADD + HSET script. ----
    // And the layout floor: redis-benchmark running EVALSHA of a script that issues exactly the
    // commands a2's append of one event must issue on the seed's data layout
    // (docs/redis-layout.md), with constant arguments and no logic: what any implementation of that
    // layout can reach at most.
    note("redis-benchmark ceiling and layout floor");
    // The section adds up to about a million id keys (the floor's calls and a2's appends, the
    // placement rows' included: 864k and 978k measured, its note "keys added" below; more on a
    // faster machine).
    const a2::bench::SettledKeyspace ceiling_keyspace = a2::bench::settle_keyspace(admin, 1300000);
    const std::string keys_before = admin.command({"DBSIZE"});
    std::string sha = admin.command(
        {"SCRIPT", "LOAD",
         "redis.call('XADD', KEYS[1], '*', 'f', 'v') redis.call('HSET', KEYS[2], 'f', 'v') "
         "return 1"});
    const std::string ceiling_args = sha + " 2 bench-ceiling:log bench-ceiling:meta";
    std::string floor_sha = admin.command({"SCRIPT", "LOAD", kAppendFloorScript});
    store_floor_split(admin, "bench-floor:");
    const std::string floor_args = floor_sha +
                                   " 7 bench-floor:count bench-floor:meta-split "
                                   "bench-floor:ids:__rand_int__ bench-floor:log "
                                   "bench-floor:pending bench-floor:ready bench-floor:work "
                                   "__rand_int__ bench-floor";
    // A fresh id key per call, as a fresh event id makes: redis-benchmark substitutes a random
    // number below -r for each __rand_int__, and reads -r as a C int (a range of 10^12, used
    // until 2026-12-04, overflowed to none: every call then overwrote the one key
    // bench-floor:ids:000000000000 instead of adding a key).
    const std::string floor_range = "2000000000";
    const std::string floor_options = " -r " + floor_range;
    // The runs go in rounds between blocks of our own append 1 (same thread count), so a change
    // of load on the machine during the section affects all three alike (kPairRounds below).
    auto evalsha_us = [](const a2::bench::Counters& d) {
      return a2::bench::get(d, "evalsha") > 0
                 ? a2::bench::get(d, "evalsha_usec") / a2::bench::get(d, "evalsha")
                 : 0.0;
    };
    // The floor script called as a2's callers call the store: a thread per caller, each waiting
    // for its reply on a blocking hiredis connection of its own (redisCommandArgv), a fresh
    // random event id per call as redis-benchmark's -r gives: the least client work a library
    // called from many threads does per operation, without a2's validation, JSON and pool.
    auto threaded_floor = [&](int threads, a2::bench::Budget budget) {
      std::vector<redisContext*> contexts;
      for (int t = 0; t < threads; ++t) {
        redisContext* c = redisConnect(endpoint.host.c_str(), endpoint.port);
        if (c == nullptr || c->err) throw std::runtime_error("threaded floor: cannot connect");
        if (!endpoint.password.empty()) {
          auto* r = static_cast<redisReply*>(
              redisCommand(c, "AUTH %b", endpoint.password.data(), endpoint.password.size()));
          if (r != nullptr) freeReplyObject(r);
        }
        contexts.push_back(c);
      }
      a2::bench::Block block;
      try {
        block = meter.measure(threads, budget, [&](int t, std::int64_t i) {
          const std::string n = std::to_string((static_cast<std::uint64_t>(t) << 40) ^
                                               (static_cast<std::uint64_t>(i) * 2654435761u) ^
                                               static_cast<std::uint64_t>(::getpid()));
          const std::string id_key = "bench-floor:ids:" + n;
          const char* argv[] = {"EVALSHA",
                                floor_sha.c_str(),
                                "7",
                                "bench-floor:count",
                                "bench-floor:meta-split",
                                id_key.c_str(),
                                "bench-floor:log",
                                "bench-floor:pending",
                                "bench-floor:ready",
                                "bench-floor:work",
                                n.c_str(),
                                "bench-floor"};
          std::size_t lens[std::size(argv)];
          for (std::size_t k = 0; k < std::size(argv); ++k) lens[k] = std::strlen(argv[k]);
          auto* r = static_cast<redisReply*>(redisCommandArgv(
              contexts[static_cast<std::size_t>(t)], static_cast<int>(std::size(argv)), argv, lens));
          if (r == nullptr || r->type == REDIS_REPLY_ERROR) {
            if (r != nullptr) freeReplyObject(r);
            throw std::runtime_error("threaded floor: EVALSHA failed");
          }
          freeReplyObject(r);
        });
      } catch (...) {
        for (auto* c : contexts) redisFree(c);
        throw;
      }
      for (auto* c : contexts) redisFree(c);
      return block;
    };
    // In kPairRounds rounds, each redis-benchmark run (a third of the requests each time) is
    // bracketed by blocks of a2's append 1, so a change of the machine's speed during the
    // section affects all alike.
    constexpr int kPairRounds = 3;
    constexpr int kRequests = 100000 / kPairRounds;
    auto paired = [&](int threads) {
      Pair p;
      a2::bench::Budget budget{args.ms(2500 / 2), INT64_MAX};
      auto ours = [&] {
        return meter.measure(threads, budget, [&](int t, std::int64_t i) {
          (void)store->append("pair-t" + std::to_string(threads) + "-" + std::to_string(t),
                              a2::bench::events(1, i, false));
        });
      };
      a2::bench::Counters d, f;
      p.ours = ours();
      for (int round = 0; round < kPairRounds; ++round) {
        d = a2::bench::plus(d, meter.around([&] {
          p.ceiling.merge(redis_benchmark(endpoint, ceiling_args, threads, kRequests));
        }));
        f = a2::bench::plus(f, meter.around([&] {
          p.floor.merge(redis_benchmark(endpoint, floor_args, threads, kRequests, floor_options));
        }));
        p.threaded_floor.merge(threaded_floor(threads, {args.ms(2500 / kPairRounds), INT64_MAX}));
        p.ours.merge(ours());
      }
      p.server_us = evalsha_us(d);
      p.floor_server_us = evalsha_us(f);
      return p;
    };
    p1 = paired(1);
    p16 = paired(16);
    // Placement: the 1-thread pair's layout floor by redis-benchmark, the floor from a raw
    // hiredis client and a2's append 1 again, client and server pinned
    // (bench/cpu_placement.hpp); only on a server of our own.
    std::vector<a2::bench::Placed<Ceiling>> placements;
    if (server) {
      const a2::bench::Budget budget{args.ms(2500 / 2), INT64_MAX};
      placements = a2::bench::run_placements<Ceiling>(
          *server, *store, meter, budget, kPairRounds,
          [&] { return redis_benchmark(endpoint, floor_args, 1, kRequests, floor_options); },
          [&] {
            return threaded_floor(1, {args.ms(2500 / kPairRounds), INT64_MAX});
          });
      std::tie(placed_apart, placed_together) =
          a2::bench::placement_ratios(placements, [](const Ceiling& c) { return c.rps; });
    }
    note("ceiling section: " +
         std::to_string(std::stoll(admin.command({"DBSIZE"})) - std::stoll(keys_before)) +
         " keys added");
    admin.delete_matching("bench-floor:ids:*");  // The floor's id keys.
    const Ceiling& c1 = p1.ceiling;  // (The targets below use these figures too.)
    Table ceiling({"client", "ops/s", "p50 µs", "server µs/op", "a2 append 1 event ops/s",
                   "a2 p50 µs", "a2 server µs/op", "a2 / ceiling (ops/s)"});
    for (auto* p : {&p1, &p16}) {
      ceiling.add(
          {"`redis-benchmark ... -c " + std::to_string(p == &p16 ? 16 : 1) +
               " ... EVALSHA <ceiling>`" +
               (p == &p16 ? " vs a2 with 16 threads on 16 sessions" : " vs a2 with 1 thread"),
           fmt(p->ceiling.rps, 0), fmt(p->ceiling.p50_ms * 1000, 0), fmt(p->server_us, 1),
           fmt(p->ours.m.ops_per_s(), 0), fmt(p->ours.m.latency.p50_us(), 0),
           fmt(p->ours.per_op("evalsha_usec"), 1), percent(p->ours.m.ops_per_s(), p->ceiling.rps)});
    }
    Table floors({"client", "floor ops/s", "floor p50 µs", "floor server µs/op",
                  "floor / ceiling (ops/s)", "a2 / floor (ops/s)"});
    for (auto* p : {&p1, &p16}) {
      floors.add({"`redis-benchmark ... -c " + std::to_string(p == &p16 ? 16 : 1) + " -r " +
                      floor_range + " ... EVALSHA <floor>`",
                  fmt(p->floor.rps, 0), fmt(p->floor.p50_ms * 1000, 0), fmt(p->floor_server_us, 1),
                  percent(p->floor.rps, p->ceiling.rps),
                  percent(p->ours.m.ops_per_s(), p->floor.rps)});
    }
    for (auto* p : {&p1, &p16}) {
      const int threads = p == &p16 ? 16 : 1;
      floors.add({"the same script from " + std::to_string(threads) +
                      (threads == 1 ? " thread" : " threads") +
                      ", each on a blocking hiredis connection of its own",
                  fmt(p->threaded_floor.m.ops_per_s(), 0),
                  fmt(p->threaded_floor.m.latency.p50_us(), 0),
                  fmt(p->threaded_floor.per_op("evalsha_usec"), 1),
                  percent(p->threaded_floor.m.ops_per_s(), p->ceiling.rps),
                  percent(p->ours.m.ops_per_s(), p->threaded_floor.m.ops_per_s())});
    }
    std::cout << "### Ceiling: redis-benchmark, EVALSHA of one XADD + one HSET\n\n"
              << "Script: `redis.call('XADD', KEYS[1], '*', 'f', 'v') redis.call('HSET', "
                 "KEYS[2], 'f', 'v') return 1` (SCRIPT LOADed first), same server. Full command: `"
              << c1.command
              << "` (and `-c 16`). The redis-benchmark runs (ceiling and floor) go in "
              << kPairRounds
              << " rounds, each command once per round (the requests shown per run; ops/s over "
                 "all its runs' requests and time, p50 the mean of the runs' medians), and a "
                 "block of a2's append 1 at the same concurrency (of "
              << args.ms(2500 / 2).count()
              << " ms, summed in the a2 columns) comes before the first round and after each, "
                 "so a change of the machine's speed during the section affects all alike. "
                 "Server µs/op = `usec` of EVALSHA in `INFO "
                 "commandstats` per call. Before the section, the keyspace's hash table was made "
                 "steady for the keys it adds (bench/redis_keyspace.hpp: "
              << ceiling_keyspace.describe() << ").\n\n";
    ceiling.print();
    std::cout
        << "### Layout floor: redis-benchmark, EVALSHA of the commands an append must run\n\n"
           "The commands a2's append of one fresh event issues on the seed's layout "
           "(docs/redis-layout.md), with constant arguments and no logic, so no implementation "
           "that keeps that layout and its wake-up can be faster: MGET of the counter, "
           "split and id key; XADD of the six stream fields; MSET of the "
           "owner record and the counter; ZADD pending; ZADD ready; ZADD LT of the work "
           "index; PUBLISH of a wake-up carrying the event. It is lighter than a2 in one respect: "
           "XADD takes `*` "
           "instead of an explicit `<index>-0`. The id key is random per call (`-r "
        << floor_range
        << "`), so each call adds a key, as a fresh event id does; the split key is set "
           "before the runs, as an a2 session stores it at its first write. Script:\n\n```lua\n"
        << kAppendFloorScript << "\n```\n\nFull command: `" << p1.floor.command
        << "` (and `-c 16`). The last two rows run the same script as a2's callers call the "
           "store, in the same rounds: a thread per caller waiting for its reply on a "
           "blocking hiredis connection of its own (`redisCommandArgv`), a fresh random id per "
           "call, no validation, JSON or pool. redis-benchmark is one thread with an event loop "
           "over its 16 connections; the threaded floor shows what 16 threads that each wait "
           "for their reply cost on the same 2 cores.\n\n";
    floors.print();
    Table placement({"client and server", "layout floor ops/s (redis-benchmark)",
                     "the floor from a raw hiredis client, calls/s", "a2 append 1 event ops/s",
                     "a2 / floor", "a2 / raw client"});
    a2::bench::add_placement_rows(placement, p1.floor.rps, p1.threaded_floor, p1.ours, placements,
                                  [](const Ceiling& c) { return c.rps; });
    a2::bench::print_placement(
        {.compared = "the layout floor by redis-benchmark (`-c 1`), the floor script from a "
                     "raw hiredis client (as above)",
         .tool = "redis-benchmark",
         .server_side = "every thread of the server",
         .also = ""},
        kPairRounds, args.ms(2500 / 2).count(), !placements.empty(), server != nullptr, placement);
  }
  const Ceiling& c1 = p1.ceiling;
  const Ceiling& c16 = p16.ceiling;
  const double ours1 = p1.ours.m.ops_per_s();
  const double ours16 = p16.ours.m.ops_per_s();

  // ---- Zero script text after warm-up. ----
  note("script-text check (MONITOR)");
  std::optional<std::size_t> probe_resp;
  a2::bench::Counters probe;
  {
    Admin monitor(endpoint);
    monitor.set_timeout(std::chrono::milliseconds(5000));
    monitor.command({"MONITOR"});
    probe = meter.around([&] { (void)store->append("probe", a2::bench::events(1, 1, false)); });
    for (int k = 0; k < 50 && !probe_resp; ++k) {
      std::string line = monitor.read_reply();
      if (line.find("\"evalsha\"") != std::string::npos ||
          line.find("\"EVALSHA\"") != std::string::npos)
        probe_resp = resp_size_of_monitor_line(line);
    }
  }
  // The commands each write runs (inside its script), from the same counters.
  auto command_list = [](const a2::bench::Counters& d) {
    std::string out;
    for (const auto& [key, value] : d) {
      if (key.rfind("cmd:", 0) != 0 || value < 0.5) continue;
      if (!out.empty()) out += ", ";
      out += key.substr(4) + " " + fmt(value, 0);
    }
    return out;
  };
  Table per_write({"operation", "round trips", "commands run by the server (calls)"});
  per_write.add({"append 1 event", fmt(get(probe, "round_trips"), 0), command_list(probe)});
  {
    a2::bench::seed_cycle(*store, "probe-cycle");
    a2::StoredEvent claimed;
    auto d = meter.around([&] { a2::bench::claim_one(*store, "probe-cycle", "p", claimed); });
    per_write.add({"claim_available", fmt(get(d, "round_trips"), 0), command_list(d)});
    d = meter.around([&] { a2::bench::complete_one(*store, "probe-cycle", claimed, 0); });
    per_write.add({"complete_attempt (1 child)", fmt(get(d, "round_trips"), 0), command_list(d)});
  }
  std::size_t smallest_script = SIZE_MAX;
  std::string smallest_name;
  for (const auto& entry : std::filesystem::directory_iterator(A2_BENCH_LUA_DIR)) {
    if (entry.path().extension() != ".lua") continue;
    auto n = file_size_or_zero(entry.path().string());
    if (n > 0 && n < smallest_script) {
      smallest_script = n;
      smallest_name = entry.path().filename().string();
    }
  }
  a2::bench::Counters measured;
  for (auto& [name, b] : blocks) measured = a2::bench::plus(measured, b.delta);
  for (auto& b : suite.append_by_variant) measured = a2::bench::plus(measured, b.delta);
  for (auto& b : suite.cycle_by_variant) measured = a2::bench::plus(measured, b.delta);

  bool zero_text = get(measured, "script_load") == 0 && get(measured, "eval") == 0 && probe_resp &&
                   static_cast<std::size_t>(get(probe, "net_in")) == *probe_resp;
  std::cout << "### Script text after warm-up\n\n"
            << "- Warm-up: " << fmt(get(warm, "script_load"), 0) << " SCRIPT LOAD, "
            << fmt(get(warm, "eval"), 0) << " EVAL.\n"
            << "- Every measured block above together: " << fmt(get(measured, "script_load"), 0)
            << " SCRIPT LOAD and " << fmt(get(measured, "eval"), 0)
            << " EVAL (script text) against " << fmt(get(measured, "evalsha"), 0) << " EVALSHA.\n"
            << "- One append of 1 event (probe, MONITOR on): the server received "
            << fmt(get(probe, "net_in"), 0) << " bytes in " << fmt(get(probe, "round_trips"), 0)
            << " round trip(s), " << fmt(get(probe, "all_calls"), 0)
            << " command(s) counting those inside the script; the EVALSHA command MONITOR "
               "showed is "
            << (probe_resp ? std::to_string(*probe_resp) : std::string("(not captured)"))
            << " bytes in RESP; the smallest script file (" << smallest_name << ") alone is "
            << smallest_script << " bytes.\n"
            << "- Verdict: "
            << (zero_text ? "zero script-text bytes after warm-up (the bytes received for an "
                            "append are exactly its EVALSHA command)"
                          : "NOT confirmed (see the figures above)")
            << ".\n\n"
            << "Commands per write (`INFO commandstats` deltas around one operation):\n\n";
  per_write.print();

  // ---- Where the server time goes, by command: claim + complete at 1k and at 100k events of
  // history, and append 1 on one session against append 1 round-robin over 10k sessions.
  std::optional<double> cycle_floor_us;  // The cycle's layout floor, server µs per cycle.
  if (on("commands")) {
    if (!suite_ran) {  // The states the suite would have left.
      note("prefill the history sessions (the suite did not run)");
      a2::bench::prefill(*store, "hist1k-append", 1000);
      a2::bench::prefill(*store, "hist1k-cycle", 1000);
      a2::bench::seed_cycle(*store, "hist1k-cycle");
      a2::bench::prefill(*store, "hist100k-cycle", 100000);
      a2::bench::seed_cycle(*store, "hist100k-cycle");
      for (int n = 0; n < 5000; ++n)
        (void)store->append("many-" + std::to_string(n), a2::bench::events(3, 0, true));
    }
    note("per-command server time at 1k / 100k history and with 10k sessions");
    const a2::bench::SettledKeyspace commands_keyspace = a2::bench::settle_keyspace(admin, 100000);
    Table by_command({"operation", "state", "ops", "server µs per op in EVALSHA",
                      "of which in the commands inside", "the rest (Lua, calls' overhead)",
                      "per command inside the scripts: calls/op x µs per call (top 6)"});
    // Five interleaved rounds of 100 operations per row, summed, so a change of machine load
    // during the measurement affects every row alike.
    struct CommandProbe {
      std::string operation;
      std::string state;
      std::function<void(int)> one;
      a2::bench::Counters sum;
    };
    std::vector<CommandProbe> probes;
    for (const std::string session : {"hist1k-cycle", "hist100k-cycle"})
      probes.push_back(
          {"claim + complete (1 child)",
           session == "hist1k-cycle" ? "1k events of history" : "100k events of history",
           [&store, session](int i) { a2::bench::cycle(*store, session, "probe", i); },
           {}});
    CycleFloorCalls cycle_floor(endpoint, admin);
    probes.push_back({"claim + complete layout floor (the fast paths' commands, no logic)",
                      "a session of its own",
                      [&cycle_floor](int i) { cycle_floor(i); },
                      {}});
    probes.push_back(
        {"append 1 event",
         "1k events of history",
         [&store](int i) { (void)store->append("hist1k-append", a2::bench::events(1, i, false)); },
         {}});
    probes.push_back({"append 1 event",
                      "10k sessions (round-robin)",
                      [&store](int i) {
                        // Spread over the 5,000 append sessions of the 10k-session state.
                        (void)store->append("many-" + std::to_string((i * 9) % 5000),
                                            a2::bench::events(1, i, false));
                      },
                      {}});
    const int kRounds = 5;
    const int kPerRound = 100;
    const int kOps = kRounds * kPerRound;
    for (int round = 0; round < kRounds; ++round) {
      for (auto& p : probes) {
        auto d = meter.around([&] {
          for (int i = 0; i < kPerRound; ++i) p.one(round * kPerRound + i);
        });
        for (const auto& [key, value] : d) p.sum[key] += value;
      }
    }
    for (const auto& p : probes) {
      const auto& d = p.sum;
      std::vector<std::pair<double, std::string>> costs;
      double inside = 0;  // µs in every command inside the scripts.
      for (const auto& [key, value] : d)
        if (key.rfind("usec:", 0) == 0 && key != "usec:evalsha" && value > 0) {
          costs.push_back({value, key.substr(5)});
          inside += value;
        }
      std::sort(costs.rbegin(), costs.rend());
      std::string list;
      for (std::size_t k = 0; k < costs.size() && k < 6; ++k) {
        double calls = get(d, "cmd:" + costs[k].second);
        if (!list.empty()) list += ", ";
        list += costs[k].second + " " + fmt(calls / kOps, 1) + " x " +
                fmt(calls > 0 ? costs[k].first / calls : 0, 2) + " µs";
      }
      const double evalsha = get(d, "usec:evalsha");
      by_command.add({p.operation, p.state, std::to_string(kOps), fmt(evalsha / kOps, 1),
                      fmt(inside / kOps, 1), fmt((evalsha - inside) / kOps, 1), list});
    }
    cycle_floor.drop(admin);
    std::cout << "### Server time by command\n\n"
              << "`INFO commandstats` `usec` and `calls` deltas around 500 sequential operations "
                 "of each kind (after the blocks above; 5 interleaved rounds of 100 per row, "
                 "summed; before them, the keyspace's hash table was made steady for the keys "
                 "they add, bench/redis_keyspace.hpp: "
              << commands_keyspace.describe()
              << "). A command's time is part of its "
                 "script's EVALSHA time; the rest of EVALSHA is the Lua code itself and Redis's "
                 "work around each `redis.call` (arguments in, reply back into Lua) and around "
                 "the script (its KEYS and ARGV, its reply). The layout "
                 "floor row runs two scripts that issue the commands of claim_available's and "
                 "complete_attempt's fast paths for one event and one child with constant "
                 "arguments and no logic (keys of their own; the event advances as a2's do: each "
                 "completion's child, stream entry `<index>-0` and fields in the metadata chunk "
                 "of its index, is the next claim's event): what any implementation of the seed's "
                 "layout runs per cycle. Scripts:\n\n```lua\n-- claim\n"
              << kClaimFloorScript << "\n-- complete\n"
              << kCompleteFloorScript << "\n```\n\n";
    by_command.print();
    for (const auto& p : probes)
      if (p.state == "a session of its own") cycle_floor_us = get(p.sum, "usec:evalsha") / kOps;
  }

  // ---- Work discovery growth: find_work with 100 sessions with work, alone and beside 10k idle
  // sessions (docs/redis-layout.md#work-index). Two key prefixes of their own on the same server,
  // measured in interleaved rounds, so both see the same machine load.
  std::optional<std::vector<std::string>> discovery_target;
  if (on("discovery")) {
    note("work discovery: find_work with 100 sessions with work, and beside 10k idle sessions");
    auto work_only = open_prefix(prefix + "work");
    auto work_idle = open_prefix(prefix + "workidle");
    constexpr int kWorkSessions = 100;
    constexpr int kIdleSettled = 8000;   // Sessions with settled events only (facts, no work).
    constexpr int kIdleFinished = 2000;  // Work completed; a settled claim removed the entry.
    for (auto* s : {work_only.get(), work_idle.get()})
      for (int i = 0; i < kWorkSessions; ++i)
        (void)s->append("work-" + std::to_string(i), a2::bench::events(1, i, false));
    const int kFillThreads = 16;
    (void)a2::bench::run_threads(
        kFillThreads, {std::chrono::minutes(10), kIdleSettled / kFillThreads},
        [&](int t, std::int64_t i) {
          (void)work_idle->append("idle-" + std::to_string(t) + "-" + std::to_string(i),
                                  a2::bench::events(1, i, true));
        });
    (void)a2::bench::run_threads(
        kFillThreads, {std::chrono::minutes(10), kIdleFinished / kFillThreads},
        [&](int t, std::int64_t i) {
          const std::string s = "done-" + std::to_string(t) + "-" + std::to_string(i);
          (void)work_idle->append(s, a2::bench::events(1, i, false));
          a2::StoredEvent claimed;
          a2::bench::claim_one(*work_idle, s, "fill", claimed);
          auto done = work_idle->complete_attempt(
              {.session_id = s, .index = claimed.index, .attempt = claimed.attempt_count});
          if (done.verdict != a2::CompleteVerdict::completed)
            throw std::runtime_error("the completion of " + s + " was superseded");
          auto last = work_idle->claim_available({.session_id = s,
                                                  .holder = "fill",
                                                  .ttl_ms = 30000,
                                                  .expires_at_ms = std::nullopt,
                                                  .exclude_indexes = {},
                                                  .max_events = std::nullopt});
          if (last.verdict != a2::ClaimVerdict::settled)
            throw std::runtime_error("the finished session " + s + " still has work");
        });
    auto index_size = [&](const std::string& p) {
      return std::stoll(admin.command({"ZCARD", p + ":work"}));
    };
    if (index_size(prefix + "work") != kWorkSessions ||
        index_size(prefix + "workidle") != kWorkSessions)
      throw std::runtime_error("the work index does not hold exactly the 100 sessions with work");
    struct DiscoveryRow {
      std::string state;
      a2::Store* store;
      a2::bench::Block block;
    };
    std::vector<DiscoveryRow> discovery{
        {"100 sessions with work", work_only.get(), {}},
        {"100 sessions with work + 10k idle (8k settled-only, 2k finished)", work_idle.get(), {}}};
    for (int round = 0; round < 3; ++round) {
      for (auto& row : discovery) {
        auto b = meter.measure(1, {args.ms(1000), INT64_MAX}, [&](int, std::int64_t) {
          const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count();
          auto page = row.store->find_work({.after = std::nullopt, .due_by_ms = now, .limit = 256});
          if (page.sessions.size() != static_cast<std::size_t>(kWorkSessions))
            throw std::runtime_error("find_work returned " + std::to_string(page.sessions.size()) +
                                     " sessions");
        });
        row.block.m.merge(b.m);
        row.block.delta = a2::bench::plus(row.block.delta, b.delta);
      }
    }
    Table discovery_table({"find_work (due now, limit 256)", "ops/s", "p50 µs", "round trips/op",
                           "commands/op (incl. in scripts)", "server µs/op in EVALSHA",
                           "vs 100 sessions (server µs/op)"});
    auto& base_block = discovery[0].block;
    for (auto& row : discovery)
      discovery_table.add(
          {row.state, fmt(row.block.m.ops_per_s(), 0), fmt(row.block.m.latency.p50_us(), 0),
           fmt(row.block.per_op("round_trips"), 2), fmt(row.block.per_op("all_calls"), 2),
           fmt(row.block.per_op("evalsha_usec"), 1),
           percent(row.block.per_op("evalsha_usec"), base_block.per_op("evalsha_usec"))});
    std::cout << "### Work discovery growth\n\n"
              << "find_work (one EVALSHA of lua/find_work.lua: one ZRANGE BYSCORE) on two key "
                 "prefixes of their own: 100 sessions with one claimable event each, and the same "
                 "100 beside 10,000 idle sessions (8,000 with settled events only, 2,000 whose "
                 "event was completed and whose index entry the next claim, answering settled, "
                 "removed). Idle sessions have no index entry, so the page costs the same. 3 "
                 "interleaved rounds of "
              << args.ms(1000).count()
              << " ms per row, 1 thread, summed; server columns as above.\n\n";
    discovery_table.print();
    {
      auto& idle = discovery[1].block;
      const double cost = idle.per_op("evalsha_usec");
      const double base_cost = base_block.per_op("evalsha_usec");
      const bool same_commands =
          std::abs(idle.per_op("all_calls") - base_block.per_op("all_calls")) < 0.01;
      discovery_target = std::vector<std::string>{
          "find_work with 10k idle sessions within 10% of 100 sessions",
          "server time/op " + percent(cost, base_cost) + ", commands/op " +
              fmt(idle.per_op("all_calls"), 2) + " vs " + fmt(base_block.per_op("all_calls"), 2) +
              " (client p50 " + percent(idle.m.latency.p50_us(), base_block.m.latency.p50_us()) +
              ")",
          base_cost > 0 && cost <= 1.1 * base_cost && same_commands ? "yes" : "no"};
    }
  }

  // ---- One claim of 5,000 ready events. ----
  std::optional<std::vector<std::string>> large_target;
  if (on("claim5k")) {
    note("one claim of 5,000 ready events");
    const std::string floor_sha = admin.command({"SCRIPT", "LOAD", kLargeClaimFloorScript});
    std::vector<double> floor_ms;
    std::vector<LargeClaimRow> rows = large_claims(*store, meter, admin, [&](int rep) {
      floor_ms.push_back(large_claim_floor(*store, meter, admin, prefix, floor_sha, rep));
    });
    auto commands_with_time = [](const a2::bench::Counters& d) {
      std::string out;
      for (const auto& [key, value] : d) {
        if (key.rfind("cmd:", 0) != 0 || key == "cmd:evalsha" || value < 0.5) continue;
        if (!out.empty()) out += ", ";
        out += key.substr(4) + " " + fmt(value, 0) + " (" +
               fmt(get(d, "usec:" + key.substr(4)) / 1000.0, 2) + ")";
      }
      return out;
    };
    Table large({"claim_available", "claimed", "server ms (median, min-max)",
                 "server µs per claimed event", "server CPU ms (median)", "client ms (median)",
                 "commands inside the script: calls (server ms), first repetition"});
    for (const auto& row : rows) {
      const double ms = median(row.server_ms);
      large.add({row.name, std::to_string(row.expected),
                 fmt(ms, 1) + " (" +
                     fmt(*std::min_element(row.server_ms.begin(), row.server_ms.end()), 1) + "-" +
                     fmt(*std::max_element(row.server_ms.begin(), row.server_ms.end()), 1) + ")",
                 fmt(1000.0 * ms / static_cast<double>(row.expected), 1),
                 fmt(median(row.cpu_ms), 1), fmt(median(row.client_ms), 1),
                 commands_with_time(row.first)});
    }
    std::cout << "### One claim of 5,000 ready events\n\n"
              << "A fresh session of 5,000 appended unsettled (ready) events, then one "
                 "claim_available (1 thread). Redis runs a script alone: every other client "
                 "waits for its whole server time. Server ms = `usec` of EVALSHA in `INFO "
                 "commandstats` around that one call; server CPU ms = the "
                 "change of the server process's `used_cpu_user + used_cpu_sys` (`INFO cpu`) "
                 "around the call and its INFO snapshots, less disturbed by other processes on a "
                 "busy machine than the server time; client ms includes the INFO snapshots. "
              << rows.front().server_ms.size()
              << " repetitions per row, each on a session of its own; each repetition runs "
                 "the rows in order, then the layout floor's repetition (below).\n\n";
    large.print();
    const double floor = median(floor_ms);
    std::cout << "\n**Layout floor of this claim.** The same kind of fresh session, then one "
                 "EVALSHA of a script that runs only the commands a claim of all 5,000 events "
                 "must run on the seed's layout (ZRANGE of the ready set, one HLEN per metadata "
                 "chunk, the XRANGE, HSET of the five claim fields per event in batches of 100, "
                 "ZADD of the work index) and replies in the shape of a2's claim (per event the "
                 "stream entry's id and six values and a nil row), "
                 "with no logic of its own (`kLargeClaimFloorScript` in bench/redis_bench.cpp). "
                 "Server ms (median of "
              << floor_ms.size() << ", min-max): **" << fmt(floor, 1) << "** ("
              << fmt(*std::min_element(floor_ms.begin(), floor_ms.end()), 1) << "-"
              << fmt(*std::max_element(floor_ms.begin(), floor_ms.end()), 1)
              << "); a2's claim of all takes " << percent(median(rows[0].server_ms), floor)
              << " of it.\n\n";
    const double worst = std::max(median(rows[0].server_ms), median(rows[1].server_ms));
    large_target = std::vector<std::string>{
        "one claim of 5,000 ready events <= 30 ms of server time",
        "all: " + fmt(median(rows[0].server_ms), 1) +
            " ms, max_events = 5000: " + fmt(median(rows[1].server_ms), 1) +
            " ms (max_events = 100: " + fmt(median(rows[2].server_ms), 2) +
            " ms; the layout floor of this claim: " + fmt(floor, 1) + " ms)",
        worst <= 30 ? "yes" : "no"};
  }

  // ---- Small sessions: the metadata hashes as listpacks and as hash tables (own server). ----
  if (on("listpack") && server) {
    note("small sessions: metadata hashes as listpacks and as hash tables");
    small_sessions(open_prefix, meter, admin, prefix);
  }

  // ---- Writes at 16 threads with the default write connections and with none (the pool). ----
  // Interleaved rounds of append 1 and claim + complete on 16 sessions, on two stores whose only
  // difference is write_connections; each store counts its callers' round trips (observer).
  std::optional<double> callers_rt16_append, callers_rt16_cycle;
  // The cycle's layout floor from 16 threads and a2's cycle (default write connections) in the
  // same rounds, cycles/s.
  std::optional<std::pair<double, double>> cycle_floor16;
  if (on("writes")) {
    note("write connections at 16 threads");
    struct Variant {
      std::size_t connections;
      std::shared_ptr<a2::bench::RoundTripCounter> counter;
      std::unique_ptr<a2::Store> store;
      a2::bench::Block append, cycle;
      double append_rt = 0, cycle_rt = 0;
    };
    std::vector<Variant> variants;
    for (std::size_t c : {a2::redis::Options{}.write_connections, std::size_t{0}}) {
      Variant v{c, std::make_shared<a2::bench::RoundTripCounter>(), nullptr, {}, {}};
      auto o = options_for(prefix + "-wc" + std::to_string(c));
      o.write_connections = c;
      o.observe.observer = v.counter;
      v.store = a2::redis::open(o);
      for (int t = 0; t < 16; ++t) a2::bench::seed_cycle(*v.store, "cycle-" + std::to_string(t));
      a2::bench::cycle(*v.store, "cycle-0", "warm", 0);  // Scripts loaded, connections open.
      (void)v.store->append("warm", a2::bench::events(1, 0, false));
      (void)v.counter->take();
      variants.push_back(std::move(v));
    }
    // The cycle's layout floor (the scripts of Server time by command) as a2's callers run
    // cycles: a thread per caller on a blocking connection and keys of its own, one work index
    // key for all.
    std::vector<std::unique_ptr<CycleFloorCalls>> floor_calls;
    for (int t = 0; t < 16; ++t)
      floor_calls.push_back(std::make_unique<CycleFloorCalls>(
          endpoint, admin, "bench-cfloor16-" + std::to_string(t) + ":", "bench-cfloor16:work"));
    a2::bench::Block floor_cycle;
    constexpr int kRounds = 3;
    a2::bench::Budget budget{args.ms(1000), INT64_MAX};
    std::int64_t offset = 0;
    for (int round = 0; round < kRounds; ++round) {
      for (auto& v : variants) {
        v.append.merge(meter.measure(16, budget, [&](int t, std::int64_t i) {
          (void)v.store->append("append-" + std::to_string(t),
                                a2::bench::events(1, offset + i, false));
        }));
        v.append_rt += v.counter->take() / kRounds;
        v.cycle.merge(meter.measure(16, budget, [&](int t, std::int64_t i) {
          a2::bench::cycle(*v.store, "cycle-" + std::to_string(t), "w", offset + i);
        }));
        v.cycle_rt += v.counter->take() / kRounds;  // Per call (two per cycle).
      }
      floor_cycle.merge(meter.measure(16, budget, [&](int t, std::int64_t i) {
        (*floor_calls[static_cast<std::size_t>(t)])(offset + i);
      }));
      offset += 1000000;
    }
    for (auto& f : floor_calls) f->drop(admin);
    Table table({"write_connections", "workload", "ops/s", "p50 µs", "p99 µs",
                 "callers' round trips per call", "server read events/op",
                 "server µs/op in EVALSHA", "machine cores busy", "machine CPU µs/op"});
    for (auto& v : variants) {
      for (auto* b : {&v.append, &v.cycle}) {
        const bool is_cycle = b == &v.cycle;
        table.add({std::to_string(v.connections) +
                       (v.connections == a2::redis::Options{}.write_connections ? " (default)"
                                                                                : " (the pool)"),
                   is_cycle ? "claim + complete (1 child)" : "append 1 event",
                   fmt(b->m.ops_per_s(), 0), fmt(b->m.latency.p50_us(), 0),
                   fmt(b->m.latency.p99_us(), 0), fmt(is_cycle ? v.cycle_rt : v.append_rt, 2),
                   fmt(b->per_op("round_trips"), 2), fmt(b->per_op("evalsha_usec"), 1),
                   fmt(b->cores_busy(), 2), fmt(b->per_op("machine_cpu_s") * 1e6, 0)});
      }
    }
    table.add({"- (the layout floor: a blocking connection per thread)",
               "claim + complete layout floor (1 child)", fmt(floor_cycle.m.ops_per_s(), 0),
               fmt(floor_cycle.m.latency.p50_us(), 0), fmt(floor_cycle.m.latency.p99_us(), 0), "-",
               fmt(floor_cycle.per_op("round_trips"), 2),
               fmt(floor_cycle.per_op("evalsha_usec"), 1), fmt(floor_cycle.cores_busy(), 2),
               fmt(floor_cycle.per_op("machine_cpu_s") * 1e6, 0)});
    cycle_floor16 = {floor_cycle.m.ops_per_s(), variants.front().cycle.m.ops_per_s()};
    callers_rt16_append = variants.front().append_rt;
    callers_rt16_cycle = variants.front().cycle_rt;
    std::cout << "### Write connections at 16 threads\n\n"
                 "16 threads, each on a session of its own, on two stores that differ only in "
                 "`write_connections`: the default, where the calls that run one script share "
                 "that many connections and requests queued while one is in flight go together "
                 "in one write (docs/redis-layout.md#multiplexed-writes), and 0, where each call "
                 "takes a pooled connection (pool_size 16). "
              << kRounds << " interleaved rounds of " << budget.duration.count()
              << " ms per row, summed. Callers' round trips per call: counted by the client (an "
                 "observer summing `OperationRecord::round_trips`); server read events/op: "
                 "`total_reads_processed` per operation, below one when the server reads several "
                 "callers' requests at once; the other columns as in Operations. The last row, in "
                 "the same rounds, is the cycle's layout floor (the two scripts of Server time by "
                 "command: the commands of the claim's and the completion's fast paths with no "
                 "logic, the event advancing as a2's do) run as a2's callers run cycles: 16 threads, "
                 "each calling the claim script, then the completion script, on a blocking "
                 "hiredis connection and keys of its own (one work index key for all, as a2's): "
                 "the most cycles the seed's layout allows from 16 threads on this machine in "
                 "these rounds.\n\n";
    table.print();
    for (auto& v : variants) v.store->close();
  }

  // ---- The spin wait (store option spin_wait). ----
  if (on("spin")) {
    note("spin wait");
    auto plain = open_prefix(prefix + "-spin0");
    auto spin_options = options_for(prefix + "-spin");
    spin_options.spin_wait = a2::bench::kBenchSpinWait;
    auto spun = a2::redis::open(spin_options);
    for (auto* s : {plain.get(), spun.get()}) {
      a2::bench::seed_cycle(*s, "cycle-0");
      a2::bench::cycle(*s, "cycle-0", "warm", 0);  // Scripts loaded, connections open.
      (void)s->append("warm", a2::bench::events(1, 0, false));
    }
    // The append's layout floor script from one thread on a blocking hiredis connection, a fresh
    // id per call, its reply awaited asleep (redisCommandArgv) or after polling as the library
    // does (spin_until_readable, then the blocking read).
    const std::string floor_sha = admin.command({"SCRIPT", "LOAD", kAppendFloorScript});
    store_floor_split(admin, "bench-sfloor:");
    redisContext* raw = redisConnect(endpoint.host.c_str(), endpoint.port);
    if (raw == nullptr || raw->err) throw std::runtime_error("spin floor: cannot connect");
    if (!endpoint.password.empty())
      freeReplyObject(
          redisCommand(raw, "AUTH %b", endpoint.password.data(), endpoint.password.size()));
    // Paced as a store's spins are.
    a2::detail::SpinPacer floor_pacer(a2::bench::kBenchSpinWait);
    auto floor_call = [&](std::int64_t i, bool spin) {
      const std::string n = std::to_string((static_cast<std::uint64_t>(i) * 2654435761u) ^
                                           static_cast<std::uint64_t>(::getpid()));
      const std::string id_key = "bench-sfloor:ids:" + n;
      const char* argv[] = {"EVALSHA",
                            floor_sha.c_str(),
                            "7",
                            "bench-sfloor:count",
                            "bench-sfloor:meta-split",
                            id_key.c_str(),
                            "bench-sfloor:log",
                            "bench-sfloor:pending",
                            "bench-sfloor:ready",
                            "bench-sfloor:work",
                            n.c_str(),
                            "bench-sfloor"};
      std::size_t lens[std::size(argv)];
      for (std::size_t k = 0; k < std::size(argv); ++k) lens[k] = std::strlen(argv[k]);
      void* reply = nullptr;
      if (spin) {
        redisAppendCommandArgv(raw, static_cast<int>(std::size(argv)), argv, lens);
        for (int done = 0; done == 0;)
          if (redisBufferWrite(raw, &done) != REDIS_OK)
            throw std::runtime_error("spin floor: write failed");
        a2::detail::spin_until_readable(raw->fd, floor_pacer,
                                        std::chrono::steady_clock::now() + std::chrono::seconds(5));
        if (redisGetReply(raw, &reply) != REDIS_OK) reply = nullptr;
      } else {
        reply = redisCommandArgv(raw, static_cast<int>(std::size(argv)), argv, lens);
      }
      auto* r = static_cast<redisReply*>(reply);
      const bool ok = r != nullptr && r->type != REDIS_REPLY_ERROR;
      if (r != nullptr) freeReplyObject(r);
      if (!ok) throw std::runtime_error("spin floor: EVALSHA failed");
    };
    auto append_on = [](a2::Store& s, const std::string& session) {
      return [&s, session](int t, std::int64_t i) {
        (void)s.append(session + std::to_string(t), a2::bench::events(1, i, false));
      };
    };
    auto cycle_on = [](a2::Store& s) {
      return [&s](int, std::int64_t i) { a2::bench::cycle(s, "cycle-0", "w", i); };
    };
    // The same server farther away: its replies through a proxy that delays them.
    a2::bench::DelayProxy far_server(
        [&] { return a2::bench::connect_tcp(endpoint.host, endpoint.port); }, a2::bench::kFarDelay);
    const auto far_options = [&](const std::string& p, std::chrono::microseconds spin) {
      auto o = options_for(p);
      o.url = "redis://" + (endpoint.password.empty() ? "" : ":" + endpoint.password + "@") +
              "127.0.0.1:" + std::to_string(far_server.port());
      o.spin_wait = spin;
      return o;
    };
    auto far_plain = a2::redis::open(far_options(prefix + "-spinfar0", {}));
    auto far_spun = a2::redis::open(far_options(prefix + "-spinfar", a2::bench::kBenchSpinWait));
    for (auto* s : {far_plain.get(), far_spun.get()})
      (void)s->append("warm", a2::bench::events(1, 0, false));
    a2::bench::run_spin_section(
        meter,
        {.append_plain = append_on(*plain, "append-"),
         .append_spun = append_on(*spun, "append-"),
         .floor_asleep = [&](int, std::int64_t i) { floor_call(i, false); },
         .floor_spinning = [&](int, std::int64_t i) { floor_call(i, true); },
         .cycle_plain = cycle_on(*plain),
         .cycle_spun = cycle_on(*spun),
         .floor_asleep_client = "layout floor script, blocking hiredis connection, asleep",
         .floor_spinning_client =
             "layout floor script, blocking hiredis connection, spinning first",
         .floor_workload = "append floor",
         .append_far_plain = append_on(*far_plain, "far-append-"),
         .append_far_spun = append_on(*far_spun, "far-append-")},
        "the append's layout floor script (Layout floor) from one thread on a blocking hiredis "
        "connection",
        3, a2::bench::Budget{args.ms(1000), INT64_MAX});
    redisFree(raw);
    for (const char* k : {"count", "meta-split", "log", "pending", "ready", "work"})
      admin.command({"DEL", std::string("bench-sfloor:") + k});
    admin.delete_matching("bench-sfloor:ids:*");
    plain->close();
    spun->close();
    far_plain->close();
    far_spun->close();
  }

  // ---- Appends against a history of millions of events. ----
  // Servers of their own, alike but for the history: one empty, one holding 1.5M settled events
  // (its keyspace's table between two doublings), one holding 2.1M (just past 2^21 keys: the
  // table doubles, which Redis does incrementally over minutes). Interleaved rounds of append 1
  // at 1 and 16 threads on each, each thread on a session of its own; each server's counters
  // from its own INFO.
  std::optional<std::vector<std::string>> history_target, history_rehash;
  if (on("history") && server) {
    constexpr std::int64_t kPerSession = 1000;
    struct Variant {
      std::string state;
      std::int64_t events;
      std::unique_ptr<a2::test::RedisServer> server;
      std::unique_ptr<Admin> admin;
      std::unique_ptr<a2::bench::Meter> meter;
      std::unique_ptr<a2::Store> store;
      std::string keys, memory;
      double written_s = 0;
      a2::bench::Block at1, at16;
      double lookup_us = 0;  // The MGET of the three keys an append reads alone, server µs per call.
      double floor_us = 0;   // The append's layout floor script, server µs per call.
    };
    std::vector<Variant> variants;
    for (const auto& [state, events] : std::vector<std::pair<std::string, std::int64_t>>{
             {"empty server", 0},
             {"1.5M events of history", 1500000},
             {"2.1M events of history, its keyspace's table doubling", 2100000}}) {
      Variant v{state, events, std::make_unique<a2::test::RedisServer>(false), nullptr, nullptr,
                nullptr, {}, {}, 0, {}, {}, 0, 0};
      v.admin = std::make_unique<Admin>(parse_url(v.server->url()));
      auto* variant_admin = v.admin.get();
      v.meter =
          std::make_unique<a2::bench::Meter>([variant_admin] { return snapshot(*variant_admin); });
      auto o = options_for(prefix);
      o.url = v.server->url();
      v.store = a2::redis::open(o);
      variants.push_back(std::move(v));
    }
    for (auto& v : variants) {
      if (v.events == 0) continue;
      note("history: writing " + std::to_string(v.events) + " events");
      const auto from = std::chrono::steady_clock::now();
      const std::int64_t sessions = v.events / kPerSession;
      (void)a2::bench::run_threads(2, {std::chrono::hours(1), sessions / 2},
                                   [&](int t, std::int64_t i) {
                                     a2::bench::prefill(
                                         *v.store,
                                         "history-" + std::to_string(t * (sessions / 2) + i),
                                         kPerSession);
                                   });
      v.written_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
    }
    for (auto& v : variants) {
      v.keys = v.admin->command({"DBSIZE"});
      std::smatch m;
      std::string info = v.admin->command({"INFO", "memory"});
      v.memory = std::regex_search(info, m, std::regex(R"(used_memory_human:([^\r\n]+))"))
                     ? std::string(m[1])
                     : std::string("?");
    }
    for (auto& v : variants)  // Scripts loaded, connections open.
      (void)v.meter->measure(16, a2::bench::Budget{args.ms(300), INT64_MAX},
                             [&](int t, std::int64_t i) {
                               (void)v.store->append("warm-" + std::to_string(t),
                                                     a2::bench::events(1, i, false));
                             });
    note("history: appends");
    constexpr int kRounds = 3;
    const a2::bench::Budget budget{args.ms(1000), INT64_MAX};
    std::int64_t offset = 0;
    for (int round = 0; round < kRounds; ++round) {
      for (int threads : {1, 16}) {
        for (auto& v : variants) {
          (threads == 1 ? v.at1 : v.at16)
              .merge(v.meter->measure(threads, budget, [&](int t, std::int64_t i) {
                (void)v.store->append("append-" + std::to_string(t),
                                      a2::bench::events(1, offset + i, false));
              }));
        }
        offset += 1000000;
      }
    }
    // The key lookups alone: redis-benchmark running EVALSHA of a script that only MGETs the
    // three keys an append's MGET reads (the session's counter and split, and a random missing
    // id key), on each server.
    std::string lookup_command;
    for (auto& v : variants) {
      const std::string sha = v.admin->command(
          {"SCRIPT", "LOAD", "return #redis.call('MGET', KEYS[1], KEYS[2], KEYS[3])"});
      const std::string lookup_args = sha + " 3 " + prefix + ":append-0:count " + prefix +
                                      ":append-0:meta-split " + prefix + ":ids:__rand_int__";
      a2::bench::Counters d = v.meter->around([&] {
        lookup_command =
            redis_benchmark(parse_url(v.server->url()), lookup_args, 1, 20000, " -r 2000000000")
                .command;
      });
      v.lookup_us = get(d, "cmd:mget") > 0 ? get(d, "usec:mget") / get(d, "cmd:mget") : 0;
      // The layout floor of an append (Layout floor section) on the same server, its id key
      // random in the same keyspace.
      const std::string floor_sha = v.admin->command({"SCRIPT", "LOAD", kAppendFloorScript});
      store_floor_split(*v.admin, "bench-floor:");
      a2::bench::Counters fd = v.meter->around([&] {
        (void)redis_benchmark(parse_url(v.server->url()),
                              floor_sha +
                                  " 7 bench-floor:count bench-floor:meta-split "
                                  "bench-floor:ids:__rand_int__ bench-floor:log "
                                  "bench-floor:pending bench-floor:ready bench-floor:work "
                                  "__rand_int__ bench-floor",
                              1, 20000, " -r 2000000000");
      });
      v.floor_us = get(fd, "evalsha") > 0 ? get(fd, "evalsha_usec") / get(fd, "evalsha") : 0;
    }
    Table table({"state", "threads", "ops/s", "p50 µs", "p99 µs", "server µs/op in EVALSHA",
                 "machine CPU µs/op", "ops/s vs empty", "server µs/op vs empty",
                 "server µs/op by command inside", "the MGET alone (redis-benchmark): µs/call",
                 "layout floor (redis-benchmark): µs/call"});
    auto by_command = [](a2::bench::Block& b) {
      std::string out;
      for (const char* name : {"mget", "xadd", "mset", "zadd", "publish"})
        out += (out.empty() ? "" : ", ") + std::string(name) + " " +
               fmt(b.per_op(std::string("usec:") + name), 2);
      return out;
    };
    for (int threads : {1, 16}) {
      auto& empty = threads == 1 ? variants[0].at1 : variants[0].at16;
      for (auto& v : variants) {
        auto& b = threads == 1 ? v.at1 : v.at16;
        table.add({v.state, std::to_string(threads), fmt(b.m.ops_per_s(), 0),
                   fmt(b.m.latency.p50_us(), 0), fmt(b.m.latency.p99_us(), 0),
                   fmt(b.per_op("evalsha_usec"), 1), fmt(b.per_op("machine_cpu_s") * 1e6, 0),
                   percent(b.m.ops_per_s(), empty.m.ops_per_s()),
                   percent(b.per_op("evalsha_usec"), empty.per_op("evalsha_usec")),
                   by_command(b), fmt(v.lookup_us, 2), fmt(v.floor_us, 1)});
      }
    }
    std::cout << "### Appends against millions of events of history\n\n"
                 "Private redis-servers started for this section, alike but for the history: ";
    for (auto& v : variants) {
      std::cout << (v.events == 0 ? "one empty" : "; one holding " + std::to_string(v.events) +
                                                     " settled events (" +
                                                     std::to_string(v.events / kPerSession) +
                                                     " sessions of " +
                                                     std::to_string(kPerSession) +
                                                     ", appended in calls of 1000 by a store "
                                                     "from 2 threads in " +
                                                     fmt(v.written_s, 1) + " s)")
                << " (" << v.keys << " keys, used_memory " << v.memory << ")";
    }
    std::cout << ". Every event id is a key of its own (docs/redis-layout.md), so the history is "
                 "as many keys in the server's keyspace, whose hash table Redis doubles when the "
                 "keys reach its size (2^21 = 2,097,152 here) and then rehashes incrementally, "
                 "a few buckets with every key lookup and 1 ms per 100 ms in the background: "
                 "measured by hand with `DEBUG HTSTATS 0` on this machine, a table of 2.1M keys "
                 "was still rehashing two minutes later, and a SET cost 7-10 µs of server time "
                 "meanwhile instead of about 2. 1.5M keys stay below that size while the rows "
                 "run; 2.1M passed it while being written, so its rows run during the rehash. "
                 "Stores as the suite's; each thread appends one event per call to a session of "
                 "its own. "
              << kRounds << " interleaved rounds of " << budget.duration.count()
              << " ms per row, summed; each server's counters from its own INFO, the columns as "
                 "in Operations. The last column is the server time of an MGET of the three keys "
                 "an append's MGET reads (the session's counter and split, and a missing id "
                 "key) with nothing else, from a script run by `"
              << lookup_command
              << "` on each server after the rounds (the host and port of that server): what key "
                 "lookups cost in a keyspace of that size, whatever the code around them; then "
                 "the append's layout floor script (Layout floor section: the commands an append "
                 "must run, constant arguments, a random new id key per call), 20000 calls from "
                 "one client, its EVALSHA server time per call.\n\n";
    table.print();
    auto ratios = [&](Variant& v) {
      auto& e1 = variants[0].at1;
      auto& e16 = variants[0].at16;
      const double r1 = v.at1.per_op("evalsha_usec") / std::max(e1.per_op("evalsha_usec"), 1e-9);
      const double r16 = e16.m.ops_per_s() > 0 ? v.at16.m.ops_per_s() / e16.m.ops_per_s() : 0;
      return std::make_pair(r1, r16);
    };
    auto [r1, r16] = ratios(variants[1]);
    history_target = std::vector<std::string>{
        "append 1 with 1.5M events of history within 10% of an empty server (1 thread: server "
        "time/op; 16 threads: ops/s; Appends against millions of events of history)",
        "1 thread: server time/op " + percent(r1, 1.0) + " (ops/s " +
            percent(variants[1].at1.m.ops_per_s(), variants[0].at1.m.ops_per_s()) +
            "), 16 threads: ops/s " + percent(r16, 1.0) +
            "; the layout floor's server time on that server: " +
            percent(variants[1].floor_us, variants[0].floor_us) + " of the empty server's",
        r1 <= 1.1 && r16 >= 0.9 ? "yes" : "no"};
    auto [q1, q16] = ratios(variants[2]);
    history_rehash = std::vector<std::string>{
        "(no target) the same with 2.1M events, while the keyspace's table doubles (Redis's "
        "incremental rehash)",
        "1 thread: server time/op " + percent(q1, 1.0) + ", 16 threads: ops/s " +
            percent(q16, 1.0),
        "-"};
    for (auto& v : variants) v.store->close();
  }

  // ---- Targets. ----
  double rt_append1 = blocks["append1@1"].per_op("round_trips");
  double rt_append10 = blocks["append10@1"].per_op("round_trips");
  double rt_cycle = blocks["cycle@1"].per_op("round_trips") / 2;
  double rt_append16 = blocks["append1@16"].per_op("round_trips");
  double rt_cycle16 = blocks["cycle@16"].per_op("round_trips") / 2;
  auto one = [](double v) { return std::abs(v - 1) < 0.01; };
  Table targets({"target", "measured", "met"});
  // With 16 threads the server's read events count several callers' requests once (multiplexed
  // writes), so there the callers' own count decides (section writes); without it, the target
  // row says so.
  if (suite_ran) {
    const bool callers16 = callers_rt16_append && callers_rt16_cycle;
    targets.add(
        {"exactly one round trip per write operation",
         "append 1: " + fmt(rt_append1, 2) + ", append 10: " + fmt(rt_append10, 2) +
             ", claim and complete: " + fmt(rt_cycle, 2) + " each (server read events, 1 thread)" +
             (callers16 ? "; 16 threads, as the callers count them: " +
                              fmt(*callers_rt16_append, 2) + " / " + fmt(*callers_rt16_cycle, 2) +
                              " (server read events: " + fmt(rt_append16, 2) + " / " +
                              fmt(rt_cycle16, 2) + ", several callers' requests per read)"
                        : "; 16 threads: not counted (section writes did not run)"),
         one(rt_append1) && one(rt_append10) && one(rt_cycle) && callers16 &&
                 one(*callers_rt16_append) && one(*callers_rt16_cycle)
             ? "yes"
             : "no"});
  }
  targets.add({"zero script-text bytes after warm-up",
               fmt(get(measured, "script_load") + get(measured, "eval"), 0) +
                   " SCRIPT LOAD/EVAL; probe append " + fmt(get(probe, "net_in"), 0) +
                   " bytes = EVALSHA " +
                   (probe_resp ? std::to_string(*probe_resp) : std::string("?")) + " bytes",
               zero_text ? "yes" : "no"});
  if (ceiling_ran) {
    // The targets are anchored on the layout floor (what the seed's layout allows), not on the
    // bare ceiling, which no implementation of the layout can reach.
    targets.add({"sequential append 1 >= 90% of the layout floor (-c 1)",
                 percent(ours1, p1.floor.rps), ours1 >= 0.9 * p1.floor.rps ? "yes" : "no"});
    if (placed_apart > 0)
      targets.add(
          {"(no target) sequential append 1 vs the layout floor with client and server "
           "pinned (Placement): on different CPUs / on one CPU",
           percent(placed_apart, 1) + " / " + percent(placed_together, 1), "-"});
    targets.add({"append 1 at 16 threads >= 80% of the layout floor at -c 16",
                 percent(ours16, p16.floor.rps), ours16 >= 0.8 * p16.floor.rps ? "yes" : "no"});
    targets.add(
        {"(no target) layout floor vs the ceiling, -c 1 / -c 16: the most the seed's "
         "layout allows",
         percent(p1.floor.rps, c1.rps) + " / " + percent(p16.floor.rps, c16.rps), "-"});
    targets.add({"(no target) append 1 vs redis-benchmark EVALSHA ceiling, -c 1 / -c 16",
                 percent(ours1, c1.rps) + " / " + percent(ours16, c16.rps), "-"});
    targets.add({"(no target) the layout floor from threads on blocking connections vs "
                 "redis-benchmark's, 1 / 16 threads",
                 percent(p1.threaded_floor.m.ops_per_s(), p1.floor.rps) + " / " +
                     percent(p16.threaded_floor.m.ops_per_s(), p16.floor.rps),
                 "-"});
    targets.add({"(no target) append 1 vs the layout floor from threads on blocking "
                 "connections, 1 / 16 threads",
                 percent(ours1, p1.threaded_floor.m.ops_per_s()) + " / " +
                     percent(ours16, p16.threaded_floor.m.ops_per_s()),
                 "-"});
  }
  if (suite_ran) {
    // Absolute: 1.5x the 11.8k cycles/s of the first round's run (machine speed varies).
    const double cycles16 = blocks["cycle@16"].m.ops_per_s();
    targets.add({"claim + complete at 16 threads >= 17.7k cycles/s (1.5x 11.8k)",
                 fmt(cycles16, 0) + " cycles/s", cycles16 >= 17700 ? "yes" : "no"});
    // Where that rate is bound: the server's one core (its EVALSHA time per cycle) and the
    // machine's cores (all processes' CPU per cycle).
    const auto& cycle16 = blocks["cycle@16"];
    const double server_us = cycle16.per_op("evalsha_usec");
    const double machine_us = cycle16.per_op("machine_cpu_s") * 1e6;
    targets.add({"(no target) what bounds that rate at 16 threads: the server's EVALSHA time "
                 "per cycle (one core), the machine's CPU per cycle (all cores)",
                 fmt(server_us, 1) + " µs: at most " + fmt(server_us > 0 ? 1e6 / server_us : 0, 0) +
                     " cycles/s; " + fmt(machine_us, 0) + " µs of machine CPU, " +
                     fmt(cycle16.cores_busy(), 2) + " cores busy: at most " +
                     fmt(machine_us > 0 ? std::thread::hardware_concurrency() * 1e6 / machine_us : 0,
                         0) +
                     " cycles/s",
                 "-"});
    if (cycle_floor_us)
      targets.add({"(no target) the cycle's layout floor (Server time by command): the fast "
                   "paths' commands with no logic, server µs per cycle in EVALSHA, and the rate "
                   "that allows at most",
                   fmt(*cycle_floor_us, 1) + " µs: at most " +
                       fmt(*cycle_floor_us > 0 ? 1e6 / *cycle_floor_us : 0, 0) + " cycles/s",
                   "-"});
    // The part of a read no client can avoid: the server's time in the read's commands
    // (`usec` of every command in INFO commandstats) over 21 reads.
    constexpr int kReads = 21;
    const auto d = meter.around([&] {
      for (int i = 0; i < kReads; ++i) (void)store->read("read10k");
    });
    double server_usec = 0;
    for (const auto& [key, value] : d)
      if (key.rfind("usec:", 0) == 0) server_usec += value;
    const double read_p50_ms = blocks["read@1"].m.latency.p50_us() / 1000;
    targets.add({"read() of 10k events <= 15 ms (1 thread, p50)",
                 fmt(read_p50_ms, 1) + " ms (the server's time in its commands: " +
                     fmt(server_usec / kReads / 1000, 1) + " ms per read, INFO commandstats over " +
                     std::to_string(kReads) + " reads)",
                 read_p50_ms <= 15 ? "yes" : "no"});
  }
  if (suite_ran) {
    a2::bench::add_growth_targets(targets, suite, "evalsha_usec");
    targets.add({"(no target) the layout floor's server time on 5,000 sessions round-robin vs "
                 "one session (Layout floor as sessions grow)",
                 gfloor.growth("evalsha_usec"), "-"});
  }
  if (cycle_floor16)
    targets.add({"(no target) the cycle's layout floor from 16 threads (Write connections at 16 "
                 "threads), and a2's cycle with the default write connections against it in "
                 "the same rounds",
                 fmt(cycle_floor16->first, 0) + " cycles/s; a2 " +
                     fmt(cycle_floor16->second, 0) + " cycles/s = " +
                     percent(cycle_floor16->second, cycle_floor16->first),
                 "-"});
  if (discovery_target) targets.add(*discovery_target);
  if (large_target) targets.add(*large_target);
  if (history_target) targets.add(*history_target);
  if (history_rehash) targets.add(*history_rehash);
  std::cout << "### Redis targets\n\n";
  targets.print();
  // The temporary keys settle_keyspace() kept, on a server given by --url (a private one goes
  // with its data).
  if (!server) admin.delete_matching("a2bench-pad-*");
  store->close();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    // --only is this program's own option: taken out before the shared ones are parsed.
    std::set<std::string> only;
    std::vector<char*> rest;
    for (int i = 0; i < argc; ++i) {
      if (std::string(argv[i]) == "--only") {
        if (i + 1 >= argc) throw std::runtime_error("--only needs a value");
        std::stringstream list(argv[++i]);
        const std::vector<std::string> sections{"suite",     "ceiling", "commands",
                                                "discovery", "claim5k", "listpack",
                                                "writes",    "spin",    "history"};
        for (std::string section; std::getline(list, section, ',');) {
          if (std::find(sections.begin(), sections.end(), section) == sections.end()) {
            std::string known;
            for (const auto& name : sections) known += (known.empty() ? "" : ", ") + name;
            throw std::runtime_error("unknown section " + section + " (" + known + ")");
          }
          only.insert(section);
        }
        continue;
      }
      rest.push_back(argv[i]);
    }
    return run(a2::bench::Args::parse(static_cast<int>(rest.size()), rest.data(), "--url"), only);
  } catch (const std::exception& e) {
    std::cerr << "a2_redis_bench: " << e.what() << std::endl;
    return 1;
  }
}
