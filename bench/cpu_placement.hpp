// SPDX-License-Identifier: MIT
#pragma once

// Where the benchmark's own threads run: the CPUs this process may use, and pinning every
// thread of it to a set of them (sched_setaffinity per thread). Threads started later inherit
// the affinity of the thread that starts them, child processes (pgbench) that of the thread
// that forks them. For the placement rows, which run a client and its server process on one
// core and on different cores (bench/RESULTS.md, Interpretation: on a VM a wake-up across cores
// costs a round trip far more than one on the same core, so an unpinned 1-thread block partly
// measures where the scheduler put its processes).

#include <sched.h>
#include <unistd.h>

#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.hpp"
#include "servers/process.hpp"
#include "workloads.hpp"

namespace a2::bench {

// The CPUs this process may run on, ascending.
inline std::vector<int> allowed_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) out.push_back(cpu);
  return out;
}

// Pins every thread of this process to `cpus` (servers/process.hpp set_cpus). False when a
// thread refused (it ended meanwhile: harmless) or `cpus` is empty.
inline bool pin_this_process(const std::vector<int>& cpus) {
  return !cpus.empty() && a2::test::set_cpus(::getpid(), cpus);
}

// One placement's figures: the floor's run by the backend's benchmark tool (pgbench,
// redis-benchmark), the same floor from a raw client of this process, and a2's append.
template <class FloorRun>
struct Placed {
  std::string name;
  FloorRun floor;
  Block raw;
  Block ours;
};

// The 1-thread comparison in two placements: this process (so the store's threads and the
// tools it starts) on the first CPU it may use and every thread of `server` on the second, then
// both on the first; each placement as the unpinned pairs run: a block of a2's append 1 of
// `budget` (on a session of its own), then `rounds` rounds of the tool's floor (`floor()`), the
// raw client (`raw()`) and a2's block again. Afterwards the server and this process run on the
// CPUs this process had. Nothing when this process may use fewer than two CPUs.
template <class FloorRun, class Server, class Floor, class Raw>
std::vector<Placed<FloorRun>> run_placements(Server& server, Store& store, Meter& meter,
                                             Budget budget, int rounds, Floor floor, Raw raw) {
  std::vector<Placed<FloorRun>> out;
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) return out;
  for (const bool together : {false, true}) {
    Placed<FloorRun> placed;
    const int client_cpu = cpus[0];
    const int server_cpu = together ? cpus[0] : cpus[1];
    placed.name = together ? "client and server on one CPU (" + std::to_string(client_cpu) + ")"
                           : "client on CPU " + std::to_string(client_cpu) + ", server on CPU " +
                                 std::to_string(server_cpu);
    if (!server.set_cpus({server_cpu}) || !pin_this_process({client_cpu}))
      note("placement: a process could not be pinned (" + placed.name + ")");
    const std::string session = "placement-" + std::to_string(out.size());
    auto ours = [&] {
      return meter.measure(1, budget, [&](int, std::int64_t i) {
        (void)store.append(session, events(1, i, /*settled=*/false));
      });
    };
    placed.ours = ours();
    for (int round = 0; round < rounds; ++round) {
      placed.floor.merge(floor());
      placed.raw.merge(raw());
      placed.ours.merge(ours());
    }
    out.push_back(std::move(placed));
  }
  server.set_cpus(cpus);  // Those it had: a server of ours inherited them when we started it.
  pin_this_process(cpus);
  return out;
}

// a2's rate over the floor's in each placement (apart, together), or 0 when not measured;
// `rate` reads a floor run's rate (TPS, requests/s).
template <class FloorRun, class Rate>
std::pair<double, double> placement_ratios(const std::vector<Placed<FloorRun>>& placements,
                                           Rate rate) {
  if (placements.size() != 2) return {0, 0};
  auto ratio = [&](const Placed<FloorRun>& p) { return p.ours.m.ops_per_s() / rate(p.floor); };
  return {ratio(placements[0]), ratio(placements[1])};
}

// The Placement table's rows: the unpinned pair's figures (the floor's rate, the raw client's
// and a2's blocks), then each placement's. Columns: placement, floor, raw client, a2, a2 / floor,
// a2 / raw client.
template <class FloorRun, class Rate>
void add_placement_rows(Table& table, double unpinned_floor, const Block& unpinned_raw,
                        const Block& unpinned_ours, const std::vector<Placed<FloorRun>>& placements,
                        Rate rate) {
  auto row = [&](const std::string& name, double floor_rate, const Block& raw, const Block& ours) {
    table.add({name, fmt(floor_rate, 0), fmt(raw.m.ops_per_s(), 0), fmt(ours.m.ops_per_s(), 0),
               percent(ours.m.ops_per_s(), floor_rate),
               percent(ours.m.ops_per_s(), raw.m.ops_per_s())});
  };
  row("unpinned (the rows above)", unpinned_floor, unpinned_raw, unpinned_ours);
  for (const auto& placed : placements)
    row(placed.name, rate(placed.floor), placed.raw, placed.ours);
}

// What the Placement section prints above its table, and the table. `compared`: the floor and
// raw client it ran; `tool`: the benchmark tool the client process started; `server_side`:
// what of the server was pinned; `also`: a sentence of the backend's own (or empty); `ran`:
// whether the placements ran; `own_server`: whether the server is the program's own (the
// reason when they did not).
struct PlacementText {
  std::string compared;
  std::string tool;
  std::string server_side;
  std::string also;
};
inline void print_placement(const PlacementText& text, int rounds, long long block_ms, bool ran,
                            bool own_server, const Table& table) {
  std::cout << "### Placement: the 1-thread comparison with client and server pinned\n\n"
               "A round trip's two wake-ups cost far more when the client and the server run "
               "on different CPUs than on one (on a VM, a wake-up of an idle CPU exits to the "
               "host), and an unpinned run lands wherever the scheduler puts its processes, so "
               "the 1-thread rows above partly measure that. Here "
            << text.compared
            << " and a2's append 1 run again with this process (the store's threads and "
            << text.tool << " included) pinned to one CPU and " << text.server_side
            << " to another, then to the same one (sched_setaffinity), in " << rounds
            << " rounds as above (a2 blocks of " << block_ms
            << " ms before the first and after each). Different CPUs is the deployed case (a "
               "server on a core or machine of its own: the wake-ups' cost is in every "
               "client's round trip); one CPU shows the CPU each side spends, with nothing "
               "hidden by the wake-ups."
            << (text.also.empty() ? "" : " " + text.also)
            << (ran          ? ""
                : own_server ? " Not run: this machine has one CPU."
                             : " Not run: the server is not this program's own.")
            << "\n\n";
  table.print();
}

}  // namespace a2::bench
