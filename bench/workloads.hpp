// SPDX-License-Identifier: MIT
#pragma once

// The workloads both benchmark programs run against an a2::Store, with the server's own
// counters (Redis INFO, Postgres pg_stat_statements) taken around every measured block:
//   - append of 1 and of 10 events, claim + complete with one child, read() of 10k events,
//     each at 1 and at 16 client threads (16 threads on 16 sessions for writes);
//   - append 1 and claim + complete at 1k and 100k events of history and with 10k sessions.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "a2/observe.hpp"
#include "a2/store.hpp"
#include "bench_common.hpp"

namespace a2::bench {

// Named server counters (cumulative values, or deltas of them).
using Counters = std::map<std::string, double>;

// (std::map operators would not be found by argument-dependent lookup: named functions.)
inline Counters minus(Counters a, const Counters& b) {
  for (const auto& [k, v] : b) a[k] -= v;
  return a;
}
inline Counters plus(Counters a, const Counters& b) {
  for (const auto& [k, v] : b) a[k] += v;
  return a;
}
inline double get(const Counters& c, const std::string& key) {
  auto it = c.find(key);
  return it == c.end() ? 0 : it->second;
}

// A measured block and the server counters' change over it.
struct Block {
  Measurement m;
  Counters delta;
  double per_op(const std::string& key) const {
    return m.ops > 0 ? get(delta, key) / static_cast<double>(m.ops) : 0;
  }
  // The machine's cores the block kept busy on average (all processes; Meter's machine_cpu_s).
  double cores_busy() const { return m.seconds > 0 ? get(delta, "machine_cpu_s") / m.seconds : 0; }
  void merge(const Block& other) {
    m.merge(other.m);
    delta = plus(delta, other.delta);
  }
};

// Takes counter snapshots around blocks and subtracts the cost of the snapshots themselves
// (measured once, two snapshots with nothing in between).
class Meter {
 public:
  // Every snapshot also holds "machine_cpu_s", the machine's CPU time so far
  // (machine_busy_seconds()): a block's delta is the CPU all processes used during it.
  explicit Meter(std::function<Counters()> snapshot)
      : snapshot_([server = std::move(snapshot)] {
          Counters c = server();
          c["machine_cpu_s"] = machine_busy_seconds();
          return c;
        }) {
    Counters a = snapshot_();
    Counters b = snapshot_();
    overhead_ = minus(b, a);
  }
  Counters snapshot() { return snapshot_(); }
  const Counters& overhead() const { return overhead_; }
  Block measure(int threads, Budget budget, const std::function<void(int, std::int64_t)>& fn) {
    Counters before = snapshot_();
    Block b;
    b.m = run_threads(threads, budget, fn);
    b.delta = minus(minus(snapshot_(), before), overhead_);
    return b;
  }
  // Runs fn once (not timed) and returns the counters' change.
  Counters around(const std::function<void()>& fn) {
    Counters before = snapshot_();
    fn();
    return minus(minus(snapshot_(), before), overhead_);
  }

 private:
  std::function<Counters()> snapshot_;
  Counters overhead_;
};

// A per-operation server cost column: counter `key` divided by the block's operations.
struct CostColumn {
  std::string header;
  std::string key;
  int precision = 2;
};

// Counts the round trips a store's callers make (OperationRecord::round_trips, the client's own
// count): with Redis's multiplexed writes and Postgres's append groups the server's requests per
// operation fall below one, as several callers' requests travel together, while each caller
// still waits for one reply.
class RoundTripCounter final : public a2::Observer {
 public:
  void on_operation(const a2::OperationRecord& r) noexcept override {
    ops_.fetch_add(1, std::memory_order_relaxed);
    trips_.fetch_add(r.round_trips, std::memory_order_relaxed);
  }
  // Round trips per operation since the last take(); resets.
  double take() {
    const auto ops = ops_.exchange(0);
    const auto trips = trips_.exchange(0);
    return ops > 0 ? static_cast<double>(trips) / static_cast<double>(ops) : 0;
  }

 private:
  std::atomic<std::int64_t> ops_{0};
  std::atomic<std::int64_t> trips_{0};
};

inline Json payload(std::int64_t i) { return {{"n", i}, {"text", "benchmark event"}}; }

inline std::vector<NewEvent> events(std::size_t n, std::int64_t base, bool settled) {
  std::vector<NewEvent> out;
  out.reserve(n);
  for (std::size_t k = 0; k < n; ++k)
    out.push_back({.id = std::nullopt,
                   .type = "bench.event",
                   .payload = payload(base + static_cast<std::int64_t>(k)),
                   .cause = std::nullopt,
                   .lane = std::nullopt,
                   .settled = settled});
  return out;
}

// Appends `count` settled events (facts, not work) in batches of 1000.
inline void prefill(Store& store, const std::string& session, std::int64_t count) {
  for (std::int64_t done = 0; done < count; done += 1000) {
    auto n = static_cast<std::size_t>(std::min<std::int64_t>(1000, count - done));
    (void)store.append(session, events(n, done, /*settled=*/true));
  }
}

// Puts the one claimable event of a cycle session.
inline void seed_cycle(Store& store, const std::string& session) {
  (void)store.append(session, events(1, 0, /*settled=*/false));
}

inline void claim_one(Store& store, const std::string& session, const std::string& holder,
                      StoredEvent& out) {
  auto claim = store.claim_available({.session_id = session,
                                      .holder = holder,
                                      .ttl_ms = 600000,
                                      .expires_at_ms = std::nullopt,
                                      .exclude_indexes = {}});
  if (claim.verdict != ClaimVerdict::claimed || claim.events.size() != 1)
    throw std::runtime_error("cycle on " + session + ": expected one claimed event, got " +
                             std::string(to_string(claim.verdict)) + " with " +
                             std::to_string(claim.events.size()));
  out = std::move(claim.events.front());
}

inline void complete_one(Store& store, const std::string& session, const StoredEvent& e,
                         std::int64_t i) {
  auto done = store.complete_attempt({.session_id = session,
                                      .index = e.index,
                                      .attempt = e.attempt_count,
                                      .events = {ChildEvent{.id = std::nullopt,
                                                            .type = "bench.child",
                                                            .payload = payload(i),
                                                            .lane = std::nullopt,
                                                            .settled = false}}});
  if (done.verdict != CompleteVerdict::completed || done.events.size() != 1)
    throw std::runtime_error("cycle on " + session + ": completion was " +
                             std::string(to_string(done.verdict)));
}

// One claim + complete cycle on a session that holds exactly one claimable event: claims it
// and completes it with one (unsettled) child, which is the next cycle's claimable event.
inline void cycle(Store& store, const std::string& session, const std::string& holder,
                  std::int64_t i) {
  StoredEvent e;
  claim_one(store, session, holder, e);
  complete_one(store, session, e, i);
}

// Everything the suite measured, for the programs' ceiling and target sections.
struct SuiteResult {
  std::map<std::string, Block> blocks;  // "append1@1", "append10@16", "cycle@1", "read@16", ...
  std::vector<std::string> variants;    // "1k events of history", "100k ...", "10k sessions"
  std::vector<Block> append_by_variant;
  std::vector<Block> cycle_by_variant;
};

// Runs every workload and prints the two markdown tables (with `columns` as server cost).
// `method` explains the server columns. Session names start with `prefix`.
// What a backend adds to the growth rows (each optional). A floor measured beside them:
// prepare() runs right after the suite has written its history sessions and its 10k sessions,
// so the floor's data is as old (as cold in the CPU caches) as theirs; round(r) runs in each of
// the suite's interleaved rounds, after its blocks, so the floor's blocks see the same machine.
// before_rounds() runs after prepare(), right before the first round, and returns a sentence
// for the growth table's text (Redis: the keyspace's hash table made steady, redis_keyspace.hpp).
struct GrowthHooks {
  std::function<void()> prepare;
  std::function<void(int round)> round;
  std::function<std::string()> before_rounds;
};

// A floor on the key pattern of the growth rows: `call(session)` runs the floor's operation once
// on session "one" or "many-<k>". prepare() (after `setup`) writes 1,000 events to "one", as
// the 1k-history session has, and 3 to each of 5,000 "many-<k>" sessions, as the suite's
// 10k-sessions appends find them; each round measures a block on "one" and a block
// round-robin over the 5,000 (at most 500 calls each, alternating which goes first), summed in
// `one` and `many`. Not thread-safe: the suite calls it from its own thread.
class GrowthFloor {
 public:
  GrowthFloor(Meter& meter, const Args& args, std::function<void()> setup,
              std::function<void(const std::string&)> call)
      : meter_(meter),
        budget_{args.ms(800), 500},
        setup_(std::move(setup)),
        call_(std::move(call)) {}

  GrowthHooks hooks() {
    return {[this] { prepare(); }, [this](int r) { round(r); }, nullptr};
  }
  // The "many" block's server cost per call (counter `key`) against the "one" block's.
  std::string growth(const std::string& key) const {
    return percent(many.per_op(key), one.per_op(key));
  }
  // The table of the two blocks: calls, server cost per call (`header`, counter `key`,
  // `precision` decimals) and the growth.
  void print(const std::string& header, const std::string& key, int precision) const {
    Table t({"state", "calls", header, "vs one session"});
    t.add({"one session", std::to_string(one.m.ops), fmt(one.per_op(key), precision), "100.0%"});
    t.add({"5,000 sessions (round-robin)", std::to_string(many.m.ops),
           fmt(many.per_op(key), precision), growth(key)});
    t.print();
  }

  Block one;
  Block many;

 private:
  static constexpr int kSessions = 5000;

  void prepare() {
    note("growth floor: one session of 1,000 events, 5,000 sessions of 3");
    setup_();
    for (int i = 0; i < 1000; ++i) call_("one");
    for (int k = 0; k < 3; ++k)
      for (int s = 0; s < kSessions; ++s) call_("many-" + std::to_string(s));
  }
  void round(int r) {
    note("growth floor, round " + std::to_string(r + 1));
    auto run_one = [&] {
      one.merge(meter_.measure(1, budget_, [&](int, std::int64_t) { call_("one"); }));
    };
    auto run_many = [&] {
      auto b = meter_.measure(1, budget_, [&](int, std::int64_t i) {
        call_("many-" + std::to_string((offset_ + i) % kSessions));
      });
      offset_ += b.m.ops;
      many.merge(b);
    };
    if (r % 2 == 0) {
      run_one();
      run_many();
    } else {
      run_many();
      run_one();
    }
  }

  Meter& meter_;
  Budget budget_;
  std::function<void()> setup_;
  std::function<void(const std::string&)> call_;
  std::int64_t offset_ = 0;
};

inline SuiteResult run_suite(Store& store, Meter& meter, const Args& args,
                             const std::vector<CostColumn>& columns, const std::string& method,
                             const GrowthHooks& floor = {}) {
  SuiteResult result;
  const int kThreadCounts[] = {1, 16};
  Budget timed{args.ms(2500), INT64_MAX};

  std::vector<std::string> headers = {"workload", "threads", "ops", "ops/s", "p50 µs", "p99 µs"};
  for (const auto& c : columns) headers.push_back(c.header);
  headers.push_back("machine cores busy");
  headers.push_back("machine CPU µs/op");
  Table table(headers);
  auto add_row = [&](Table& t, std::vector<std::string> row, Block& b) {
    row.push_back(std::to_string(b.m.ops));
    row.push_back(fmt(b.m.ops_per_s(), 0));
    row.push_back(fmt(b.m.latency.p50_us(), 0));
    row.push_back(fmt(b.m.latency.p99_us(), 0));
    for (const auto& c : columns) row.push_back(fmt(b.per_op(c.key), c.precision));
    row.push_back(fmt(b.cores_busy(), 2));
    row.push_back(fmt(b.per_op("machine_cpu_s") * 1e6, 0));
    t.add(std::move(row));
  };

  for (std::size_t batch : {std::size_t{1}, std::size_t{10}}) {
    for (int threads : kThreadCounts) {
      std::string name = "append " + std::to_string(batch) + (batch == 1 ? " event" : " events");
      note(name + ", " + std::to_string(threads) + " thread(s)");
      std::string tag = "append" + std::to_string(batch) + "-t" + std::to_string(threads) + "-";
      Block b = meter.measure(threads, timed, [&](int t, std::int64_t i) {
        (void)store.append(tag + std::to_string(t), events(batch, i, false));
      });
      add_row(table, {name, std::to_string(threads)}, b);
      result.blocks["append" + std::to_string(batch) + "@" + std::to_string(threads)] = b;
    }
  }

  for (int threads : kThreadCounts) {
    note("claim+complete, " + std::to_string(threads) + " thread(s)");
    std::string tag = "cycle-t" + std::to_string(threads) + "-";
    for (int t = 0; t < threads; ++t) seed_cycle(store, tag + std::to_string(t));
    Block b = meter.measure(threads, timed, [&](int t, std::int64_t i) {
      cycle(store, tag + std::to_string(t), "worker-" + std::to_string(t), i);
    });
    add_row(table, {"claim + complete (1 child)", std::to_string(threads)}, b);
    result.blocks["cycle@" + std::to_string(threads)] = b;
  }

  note("prefill a 10k-event session");
  prefill(store, "read10k", 10000);
  for (int threads : kThreadCounts) {
    note("read 10k, " + std::to_string(threads) + " thread(s)");
    Block b = meter.measure(threads, timed, [&](int, std::int64_t) {
      auto rows = store.read("read10k");
      if (rows.size() != 10000)
        throw std::runtime_error("read10k returned " + std::to_string(rows.size()) + " rows");
    });
    add_row(table, {"read() of 10k events", std::to_string(threads)}, b);
    result.blocks["read@" + std::to_string(threads)] = b;
  }

  std::cout << "### Operations\n\n"
            << "Each block runs " << timed.duration.count()
            << " ms (at least one operation per thread). With 16 threads each thread writes "
               "its own session; for reads all 16 read the same 10k-event session. Store "
               "`pool_size` = 16. Appended events are work (unsettled); `append 10 events` "
               "counts calls of 10 events each. A claim + complete cycle is two write "
               "operations (claim_available, then complete_attempt with one child) and counts "
               "as one op. "
            << method
            << " Machine cores busy = the CPU time of every process on the machine (the "
               "benchmark, the server, anything else; /proc/stat) over the block divided by its "
               "wall time, out of the machine's "
            << std::thread::hardware_concurrency()
            << "; machine CPU µs/op = that CPU time per operation. A block that keeps every "
               "core busy is bound by CPU: more threads cannot make it faster unless each "
               "operation costs less.\n\n";
  table.print();

  // ---- Cost as the data grows. ----
  note("prefill history sessions (2 x 1k, 2 x 100k events) and 10k sessions");
  prefill(store, "hist1k-append", 1000);
  prefill(store, "hist1k-cycle", 1000);
  seed_cycle(store, "hist1k-cycle");
  prefill(store, "hist100k-append", 100000);
  prefill(store, "hist100k-cycle", 100000);
  seed_cycle(store, "hist100k-cycle");
  constexpr int kSessions = 10000;
  // Sessions 0..4999 serve the append blocks, 5000..9999 the claim + complete blocks; all 10k
  // exist during both, and each holds 2 settled events and one claimable one. The append
  // sessions hold work as the history sessions do once their first append ran, so both kinds
  // of block append to a session that is already due: on Postgres an append to a session
  // without work also creates its work index entry, which one already due does not need
  // (docs/postgres-layout.md#a2_work); with one append per session per block, that would be
  // every append here and only the first one there.
  run_threads(16, {std::chrono::hours(1), kSessions / 16 + 1}, [&](int t, std::int64_t i) {
    std::int64_t n = i * 16 + t;
    if (n >= kSessions) return;
    auto evs = events(3, 0, true);
    evs.back().settled = false;
    (void)store.append("many-" + std::to_string(n), std::move(evs));
  });
  if (floor.prepare) floor.prepare();
  std::string before_rounds;
  if (floor.before_rounds) before_rounds = floor.before_rounds();

  struct Variant {
    std::string name;
    std::function<std::string(std::int64_t)> append_session;
    std::function<std::string(std::int64_t)> cycle_session;
  };
  std::vector<Variant> variants = {
      {"1k events of history", [](std::int64_t) { return std::string("hist1k-append"); },
       [](std::int64_t) { return std::string("hist1k-cycle"); }},
      {"100k events of history", [](std::int64_t) { return std::string("hist100k-append"); },
       [](std::int64_t) { return std::string("hist100k-cycle"); }},
      {"10k sessions (round-robin)",
       [](std::int64_t i) { return "many-" + std::to_string(i % (kSessions / 2)); },
       [](std::int64_t i) {
         return "many-" + std::to_string(kSessions / 2 + i % (kSessions / 2));
       }},
  };
  // Interleaved rounds in rotating order, so a burst of load from elsewhere on the machine hits
  // every variant alike; at most 1000 operations per block keeps the 1k sessions near 1k events.
  constexpr int kRounds = 10;
  Budget round{args.ms(800), 500};
  result.append_by_variant.resize(variants.size());
  result.cycle_by_variant.resize(variants.size());
  std::vector<std::int64_t> offsets(variants.size(), 0);
  for (int r = 0; r < kRounds; ++r) {
    // Each round starts with a different variant, so none always follows the same one.
    for (std::size_t k = 0; k < variants.size(); ++k) {
      const std::size_t v = (k + static_cast<std::size_t>(r)) % variants.size();
      note("history: " + variants[v].name + ", round " + std::to_string(r + 1));
      std::int64_t base = offsets[v];
      Block a = meter.measure(1, round, [&](int, std::int64_t i) {
        (void)store.append(variants[v].append_session(base + i), events(1, i, false));
      });
      Block c = meter.measure(1, round, [&](int, std::int64_t i) {
        cycle(store, variants[v].cycle_session(base + i), "worker", i);
      });
      offsets[v] += std::max(a.m.ops, c.m.ops);
      result.append_by_variant[v].merge(a);
      result.cycle_by_variant[v].merge(c);
    }
    if (floor.round) floor.round(r);
  }
  for (const auto& v : variants) result.variants.push_back(v.name);

  std::vector<std::string> hist_headers = {"workload", "state", "ops", "ops/s", "p50 µs",
                                           "p99 µs"};
  for (const auto& c : columns) hist_headers.push_back(c.header);
  hist_headers.push_back("ops/s vs 1k");
  hist_headers.push_back("p50 vs 1k");
  Table hist(hist_headers);
  auto hist_rows = [&](const std::string& workload, std::vector<Block>& blocks) {
    double base_ops = blocks[0].m.ops_per_s();
    double base_p50 = blocks[0].m.latency.p50_us();
    for (std::size_t v = 0; v < blocks.size(); ++v) {
      Block& b = blocks[v];
      std::vector<std::string> row = {workload, variants[v].name};
      row.push_back(std::to_string(b.m.ops));
      row.push_back(fmt(b.m.ops_per_s(), 0));
      row.push_back(fmt(b.m.latency.p50_us(), 0));
      row.push_back(fmt(b.m.latency.p99_us(), 0));
      for (const auto& c : columns) row.push_back(fmt(b.per_op(c.key), c.precision));
      row.push_back(percent(b.m.ops_per_s(), base_ops));
      row.push_back(percent(b.m.latency.p50_us(), base_p50));
      hist.add(std::move(row));
    }
  };
  hist_rows("append 1 event", result.append_by_variant);
  hist_rows("claim + complete (1 child)", result.cycle_by_variant);
  std::cout << "### Cost as the data grows (1 thread)\n\n"
            << kRounds << " interleaved rounds (each starting with the next state) of at most "
            << round.max_ops_per_thread << " operations or " << round.duration.count()
            << " ms per block, summed. History events are settled (facts, not work), so "
               "claim_available finds only the cycle's one claimable event. 10k sessions: "
               "10,000 sessions of 3 events exist, each holding exactly one claimable event; "
               "appends go round-robin over 5,000 of them and claim + complete cycles over the "
               "other 5,000 (so every append, as on the history sessions after their first, "
               "writes to a session that already has work)."
            << (before_rounds.empty() ? "" : " Before the first round: " + before_rounds + ".")
            << "\n\n";
  hist.print();
  return result;
}

// The rows of the "within 10% of 1k" targets, added to `targets`. The verdict uses the server's
// own time per operation (`server_cost_key`): what could grow with the data is the work the
// server does, while the client's share of an operation does not depend on it, and the server
// time is far less disturbed by a busy machine than what the client observes. The client's p50
// and ops/s are shown beside it. Without a server counter the verdict uses the p50.
// `part_key`, when given, is a part of the server cost shown beside it (`part_label`, its
// growth in the same ratio).
inline void add_growth_targets(Table& targets, SuiteResult& r,
                               const std::string& server_cost_key = "",
                               const std::string& part_key = "",
                               const std::string& part_label = "") {
  for (std::size_t v = 1; v < r.variants.size(); ++v) {
    for (auto* list : {&r.append_by_variant, &r.cycle_by_variant}) {
      std::string what = list == &r.append_by_variant ? "append 1" : "claim + complete";
      Block& base = (*list)[0];
      Block& b = (*list)[v];
      double p50 = b.m.latency.p50_us();
      double base_p50 = base.m.latency.p50_us();
      bool met = base_p50 > 0 && p50 <= 1.1 * base_p50;
      std::string text;
      if (!server_cost_key.empty()) {
        double cost = b.per_op(server_cost_key);
        double base_cost = base.per_op(server_cost_key);
        met = base_cost > 0 && cost <= 1.1 * base_cost;
        text = "server time/op " + percent(cost, base_cost) + " (";
        if (!part_key.empty())
          text += part_label + " " + percent(b.per_op(part_key), base.per_op(part_key)) + "; ";
        text += "client p50 " + percent(p50, base_p50) + ", ops/s " +
                percent(b.m.ops_per_s(), base.m.ops_per_s()) + ")";
      } else {
        text = "p50 " + percent(p50, base_p50) + " (ops/s " +
               percent(b.m.ops_per_s(), base.m.ops_per_s()) + ")";
      }
      targets.add({what + " at " + r.variants[v] + " within 10% of 1k", text + " of the 1k figure",
                   met ? "yes" : "no"});
    }
  }
}

}  // namespace a2::bench
