// SPDX-License-Identifier: MIT
#pragma once

// The "Spin wait" section of both benchmark programs (store option spin_wait,
// docs/semantics.md#spin-wait): a2 with the default (no spinning) and with spin_wait, beside
// the backend's floor client waiting for each reply asleep and spinning, in interleaved rounds.
// The spin counters are the process's (src/common/spin_wait.hpp): the library's waits and the
// floor client's, which spins with the same function.

#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "common/spin_wait.hpp"
#include "workloads.hpp"

namespace a2::bench {

// The spin_wait the section gives a2 and the floor client: a few of this machine's round trips
// to a server on it (35-80 µs), so a reply that comes at all comes while spinning.
inline constexpr std::chrono::microseconds kBenchSpinWait{200};

// One row: who calls, what, from how many threads; `op(thread, i)` is one operation.
struct SpinContender {
  std::string client;
  std::string workload;
  int threads = 1;
  std::function<void(int, std::int64_t)> op;
  Block block{};
  a2::detail::SpinCounts spun{};  // Summed over the rounds.
};

// Runs every contender's block in each of `rounds` rounds, in order, `budget` each; the
// operations' `i` is offset by a million per round (fresh ids and sessions' counters).
inline void run_spin_rounds(Meter& meter, std::vector<SpinContender>& contenders, int rounds,
                            Budget budget) {
  for (int round = 0; round < rounds; ++round)
    for (auto& c : contenders) {
      const auto before = a2::detail::spin_counts();
      const std::int64_t offset = static_cast<std::int64_t>(round) * 1000000;
      c.block.merge(
          meter.measure(c.threads, budget, [&](int t, std::int64_t i) { c.op(t, offset + i); }));
      const auto after = a2::detail::spin_counts();
      c.spun.spins += after.spins - before.spins;
      c.spun.answered += after.answered - before.answered;
      c.spun.declined += after.declined - before.declined;
      c.spun.paused += after.paused - before.paused;
    }
}

// One operation `op(thread, i)` of a row.
using SpinOp = std::function<void(int, std::int64_t)>;

// What the section runs on a backend: each an operation `op(thread, i)`.
struct SpinSectionOps {
  std::function<void(int, std::int64_t)> append_plain, append_spun;     // a2's append of one event.
  std::function<void(int, std::int64_t)> floor_asleep, floor_spinning;  // One thread's floor.
  std::function<void(int, std::int64_t)> cycle_plain, cycle_spun;  // Claim + complete, 1 child.
  std::string floor_asleep_client, floor_spinning_client, floor_workload;
  // a2's append of one event with and without spin_wait, against the server through a
  // DelayProxy of kFarDelay (bench/delay_proxy.hpp); rows 9 and 10 when set.
  std::function<void(int, std::int64_t)> append_far_plain, append_far_spun;
};

// How much later than the server's a far server's replies come (rows 9 and 10).
inline constexpr std::chrono::microseconds kFarDelay{300};

// Runs the section (rows 1-8: a2's append with and without spinning, the floor client asleep and
// spinning, a2's cycle with and without, a2's append at 16 threads with and without) in `rounds`
// interleaved rounds of `budget` each, and prints it: the heading, `floor_text` (what the floor
// client is), the method and the table. The append ops of 16 threads take the thread's number.
inline void run_spin_section(Meter& meter, const SpinSectionOps& ops, const std::string& floor_text,
                             int rounds, Budget budget) {
  const std::string plain = "a2 (default: no spin)";
  const std::string spun = "a2, spin_wait " + std::to_string(kBenchSpinWait.count()) + " µs";
  std::vector<SpinContender> rows{
      {plain, "append 1 event", 1, ops.append_plain},
      {spun, "append 1 event", 1, ops.append_spun},
      {ops.floor_asleep_client, ops.floor_workload, 1, ops.floor_asleep},
      {ops.floor_spinning_client, ops.floor_workload, 1, ops.floor_spinning},
      {plain, "claim + complete (1 child)", 1, ops.cycle_plain},
      {spun, "claim + complete (1 child)", 1, ops.cycle_spun},
      {plain, "append 1 event", 16, ops.append_plain},
      {spun, "append 1 event", 16, ops.append_spun}};
  const std::string far = ", server " + std::to_string(kFarDelay.count()) + " µs away";
  if (ops.append_far_plain && ops.append_far_spun) {
    rows.push_back({plain + far, "append 1 event", 1, ops.append_far_plain});
    rows.push_back({spun + far, "append 1 event", 1, ops.append_far_spun});
  }
  run_spin_rounds(meter, rows, rounds, budget);
  // a2 against the floor client as each waits; each spinning row against its sleeping twin.
  const auto bases_of = [](std::size_t i) -> std::vector<std::size_t> {
    switch (i) {
      case 0:
        return {2};
      case 1:
        return {0, 3};
      case 3:
        return {2};
      case 5:
        return {4};
      case 7:
        return {6};
      case 9:
        return {8};
      default:
        return {};
    }
  };
  std::cout << "### Spin wait (store option spin_wait)\n\n"
               "a2 with the default (a call's thread sleeps until its reply comes) and with "
               "`spin_wait` (it first polls its socket: docs/semantics.md#spin-wait), beside "
            << floor_text << ", its reply awaited asleep and after polling the same way. " << rounds
            << " interleaved rounds of " << budget.duration.count()
            << " ms per row, summed; rows numbered from 1. spin_wait = " << kBenchSpinWait.count()
            << " µs for the spinning rows (the library's option, and the floor client polling "
               "with the library's function, src/common/spin_wait.hpp). Spins/op: waits that "
               "spun per operation; answered while spinning: of those, the share whose reply "
               "came before the spin's end; declined/op: waits that did not spin because "
               "another call was in flight or another thread of the process was spinning; "
               "paused/op: waits that did not spin because their store's spins were paused ("
            << a2::detail::kSpinMissesToPause
            << " spins in a row had run out without a reply: then none for "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   a2::detail::spin_pause_for(kBenchSpinWait))
                   .count()
            << " ms; the floor client is paced alike). "
               "Machine columns as in Operations: a spinning thread keeps a core busy while it "
               "polls, which the machine CPU per operation shows."
            << (rows.size() > 8
                    ? " Rows 9 and 10: the same two stores' options against the same server "
                      "through a proxy on this machine that hands each reply to its client " +
                          std::to_string(kFarDelay.count()) +
                          " µs after it came (bench/delay_proxy.hpp), a server farther away "
                          "than spin_wait is for: with spin_wait the store pauses its spins, so "
                          "it costs about what the default costs."
                    : std::string())
            << "\n\n";
  Table table({"client", "workload", "threads", "ops/s", "p50 µs", "p99 µs", "spins/op",
               "answered while spinning", "declined/op", "paused/op", "machine cores busy",
               "machine CPU µs/op", "ops/s vs"});
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& c = rows[i];
    auto m = c.block.m;
    const double n = static_cast<double>(m.ops);
    std::string versus;
    for (const std::size_t b : bases_of(i))
      versus += (versus.empty() ? "" : "; ") +
                percent(m.ops_per_s(), rows.at(b).block.m.ops_per_s()) + " of row " +
                std::to_string(b + 1);
    table.add(
        {c.client, c.workload, std::to_string(c.threads), fmt(m.ops_per_s(), 0),
         fmt(m.latency.p50_us(), 0), fmt(m.latency.p99_us(), 0),
         fmt(n > 0 ? static_cast<double>(c.spun.spins) / n : 0, 2),
         c.spun.spins > 0
             ? percent(static_cast<double>(c.spun.answered), static_cast<double>(c.spun.spins))
             : "-",
         fmt(n > 0 ? static_cast<double>(c.spun.declined) / n : 0, 2),
         fmt(n > 0 ? static_cast<double>(c.spun.paused) / n : 0, 2), fmt(c.block.cores_busy(), 2),
         fmt(c.block.per_op("machine_cpu_s") * 1e6, 0), versus.empty() ? "-" : versus});
  }
  table.print();
}

}  // namespace a2::bench
