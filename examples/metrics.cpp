// SPDX-License-Identifier: MIT
// Prometheus metrics of an a2 store (docs/observe.md#metrics): opens a store with the exporter as
// its observer, runs a few operations, and serves http://127.0.0.1:PORT/metrics until killed.
//
//   metrics PORT [STORE]      STORE: "memory" (default), redis://... or unix://... (when built
//                             with the Redis backend), postgres://... (with Postgres).
//   curl -s http://127.0.0.1:PORT/metrics | grep ^a2_

#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "a2/a2.hpp"
#include "a2/prometheus.hpp"
#ifdef A2_EXAMPLE_REDIS
#include "a2/redis.hpp"
#endif
#ifdef A2_EXAMPLE_POSTGRES
#include "a2/postgres.hpp"
#endif

namespace {

volatile std::sig_atomic_t g_stop = 0;

std::unique_ptr<a2::Store> open_store(const std::string& url, const a2::ObserveOptions& observe) {
  if (url == "memory") return a2::memory::open({.observe = observe});
#ifdef A2_EXAMPLE_REDIS
  if (url.rfind("redis://", 0) == 0 || url.rfind("unix://", 0) == 0) {
    a2::redis::Options o;
    o.url = url;
    o.observe = observe;
    return a2::redis::open(o);
  }
#endif
#ifdef A2_EXAMPLE_POSTGRES
  if (url.rfind("postgres", 0) == 0) {
    a2::postgres::Options o;
    o.connection = url;
    o.observe = observe;
    return a2::postgres::open(o);
  }
#endif
  throw std::invalid_argument("unknown or unsupported store: " + url);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: metrics PORT [memory|redis://...|postgres://...]\n";
    return 2;
  }
  try {
    auto registry = std::make_shared<prometheus::Registry>();
    auto exporter = std::make_shared<a2::prometheus::Exporter>(registry);
    auto store = open_store(argc > 2 ? argv[2] : "memory", {.observer = exporter});

    // A little work, so that the page shows every family.
    a2::NewEvent placed, paid;
    placed.type = "order.placed";
    placed.payload = {{"total", 12}};
    paid.type = "order.paid";
    (void)store->append("orders/1", {placed, paid});
    auto claim =
        store->claim_available({.session_id = "orders/1", .holder = "demo", .ttl_ms = 30000});
    for (const auto& e : claim.events)
      (void)store->complete_attempt(
          {.session_id = "orders/1", .index = e.index, .attempt = e.attempt_count});
    (void)store->read("orders/1");

    auto exposer = a2::prometheus::expose(registry, "127.0.0.1:" + std::string(argv[1]));
    std::cout << "serving http://127.0.0.1:" << exposer->GetListeningPorts().at(0) << "/metrics"
              << std::endl;
    std::signal(SIGINT, [](int) { g_stop = 1; });
    std::signal(SIGTERM, [](int) { g_stop = 1; });
    while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } catch (const std::exception& e) {
    std::cerr << "metrics: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
