// SPDX-License-Identifier: MIT
// The cost of the hooks (docs/observe.md#cost): ns per memory append of one event without an
// observer and with an observer that does nothing. Compiled against the headers before the hooks
// (-DA2_BENCH_BASELINE) it gives the baseline.
//
//   observe_bench [appends per run = 200000] [runs = 5]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "a2/a2.hpp"

namespace {

#ifndef A2_BENCH_BASELINE
class NullObserver final : public a2::Observer {};
#endif

double ns_per_append(bool with_observer, int appends) {
  a2::memory::Options options;
#ifndef A2_BENCH_BASELINE
  if (with_observer) options.observe.observer = std::make_shared<NullObserver>();
#else
  (void)with_observer;
#endif
  auto store = a2::memory::open(options);
  std::vector<a2::NewEvent> batch(1);
  batch[0].type = "t";
  batch[0].settled = true;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < appends; ++i) (void)store->append("s" + std::to_string(i % 64), batch);
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  return took.count() / appends;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int appends = argc > 1 ? std::atoi(argv[1]) : 200000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  std::vector<double> unset, set;
  for (int r = 0; r < runs; ++r) {  // Interleaved, so drift hits both alike.
    unset.push_back(ns_per_append(false, appends));
#ifndef A2_BENCH_BASELINE
    set.push_back(ns_per_append(true, appends));
#endif
  }
  std::printf("memory append, no observer:   %.1f ns/op (median of %d x %d)\n", median(unset), runs,
              appends);
#ifndef A2_BENCH_BASELINE
  std::printf("memory append, null observer: %.1f ns/op\n", median(set));
#endif
  return 0;
}
