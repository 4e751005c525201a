// SPDX-License-Identifier: MIT
// The Prometheus exporter: the hooks' records as counters and a histogram
// (docs/observe.md#metrics).

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <chrono>
#include <string>

#include "a2/prometheus.hpp"

namespace a2::prometheus {
namespace {

namespace pm = ::prometheus;

// 100 us to 10 s, about three buckets a decade.
const pm::Histogram::BucketBoundaries& buckets() {
  static const pm::Histogram::BucketBoundaries b{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                 0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                                 1,      2.5,     5,      10};
  return b;
}

std::string s(std::string_view v) { return std::string(v); }

}  // namespace

Exporter::Exporter(std::shared_ptr<pm::Registry> registry)
    : registry_(std::move(registry)),
      operations_(pm::BuildCounter()
                      .Name("a2_operations_total")
                      .Help("a2 store operations (and worker jobs, op=\"job\") by outcome")
                      .Register(*registry_)),
      durations_(pm::BuildHistogram()
                     .Name("a2_operation_duration_seconds")
                     .Help("Duration of a2 store operations and worker jobs")
                     .Register(*registry_)),
      work_(pm::BuildCounter()
                .Name("a2_work_total")
                .Help("Work transitions of events: claimed, completed, failed, ...")
                .Register(*registry_)),
      round_trips_(pm::BuildCounter()
                       .Name("a2_round_trips_total")
                       .Help("Network round trips a2 store operations made")
                       .Register(*registry_)),
      logs_(pm::BuildCounter()
                .Name("a2_log_events_total")
                .Help("a2 log events: reconnect, script_reload, slow_operation, "
                      "safety_poll_catch_up")
                .Register(*registry_)),
      spins_(pm::BuildCounter()
                 .Name("a2_spin_waits_total")
                 .Help("Waits for a reply that polled first (spin_wait), by whether the reply "
                       "came while polling")
                 .Register(*registry_)) {}

Exporter::~Exporter() = default;

// Family::Add returns the existing series for known labels (under the family's mutex), so every
// callback is a lookup and an atomic add. Any failure (out of memory) is swallowed: metrics must
// not break the store.
void Exporter::on_operation(const OperationRecord& r) noexcept {
  try {
    const std::string op = s(r.operation), backend = s(r.backend);
    operations_.Add({{"op", op}, {"backend", backend}, {"outcome", s(r.outcome)}}).Increment();
    durations_.Add({{"op", op}, {"backend", backend}}, buckets())
        .Observe(std::chrono::duration<double>(r.duration).count());
    auto& trips = round_trips_.Add({{"op", op}, {"backend", backend}});
    if (r.round_trips > 0) trips.Increment(static_cast<double>(r.round_trips));
    // Only stores with spin_wait spin: the series appear once one does.
    if (r.spins > 0) {
      spins_.Add({{"op", op}, {"backend", backend}, {"answered", "yes"}})
          .Increment(static_cast<double>(r.spins_answered));
      spins_.Add({{"op", op}, {"backend", backend}, {"answered", "no"}})
          .Increment(static_cast<double>(r.spins - r.spins_answered));
    }
  } catch (...) {
  }
}

void Exporter::on_work(const WorkRecord& r) noexcept {
  try {
    work_.Add({{"transition", s(to_string(r.transition))}, {"backend", s(r.backend)}}).Increment();
  } catch (...) {
  }
}

void Exporter::on_log(const LogRecord& r) noexcept {
  try {
    logs_.Add({{"event", s(r.event)}, {"level", s(to_string(r.level))}, {"backend", s(r.backend)}})
        .Increment();
  } catch (...) {
  }
}

std::unique_ptr<pm::Exposer> expose(const std::shared_ptr<pm::Registry>& registry,
                                    const std::string& bind_address) {
  auto exposer = std::make_unique<pm::Exposer>(bind_address);
  exposer->RegisterCollectable(registry);
  return exposer;
}

}  // namespace a2::prometheus
