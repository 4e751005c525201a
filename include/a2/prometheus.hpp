// SPDX-License-Identifier: MIT
#pragma once

#include <memory>
#include <string>

#include "a2/observe.hpp"

namespace prometheus {
class Counter;
class Exposer;
class Histogram;
template <typename T>
class Family;
class Registry;
}  // namespace prometheus

// The Prometheus exporter (component a2::prometheus, built when prometheus-cpp is found): an
// Observer that counts what a store reports into a prometheus::Registry. docs/observe.md#metrics
// names the series and what to alert on.
namespace a2::prometheus {

// Registers in `registry`:
//   a2_operations_total{op,backend,outcome}        counter
//   a2_operation_duration_seconds{op,backend}      histogram, buckets 100 us .. 10 s
//   a2_work_total{transition,backend}              counter
//   a2_round_trips_total{op,backend}               counter
//   a2_log_events_total{event,level,backend}       counter
//   a2_spin_waits_total{op,backend,answered}       counter (stores with spin_wait only)
// Set it as ObserveOptions::observer of one or more stores (several stores may share one
// Exporter). Thread-safe. Keeps the registry alive.
class Exporter final : public Observer {
 public:
  explicit Exporter(std::shared_ptr<::prometheus::Registry> registry);
  ~Exporter() override;
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  void on_operation(const OperationRecord& record) noexcept override;
  void on_work(const WorkRecord& record) noexcept override;
  void on_log(const LogRecord& record) noexcept override;

  const std::shared_ptr<::prometheus::Registry>& registry() const noexcept { return registry_; }

 private:
  std::shared_ptr<::prometheus::Registry> registry_;
  ::prometheus::Family<::prometheus::Counter>& operations_;
  ::prometheus::Family<::prometheus::Histogram>& durations_;
  ::prometheus::Family<::prometheus::Counter>& work_;
  ::prometheus::Family<::prometheus::Counter>& round_trips_;
  ::prometheus::Family<::prometheus::Counter>& logs_;
  ::prometheus::Family<::prometheus::Counter>& spins_;
};

// Serves `registry` at http://<bind_address>/metrics ("127.0.0.1:9464"; port 0: a free one, see
// prometheus::Exposer::GetListeningPorts) until the returned Exposer is destroyed. Throws
// std::exception when it cannot listen.
std::unique_ptr<::prometheus::Exposer> expose(
    const std::shared_ptr<::prometheus::Registry>& registry, const std::string& bind_address);

}  // namespace a2::prometheus
