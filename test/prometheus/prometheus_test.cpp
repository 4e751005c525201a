// SPDX-License-Identifier: MIT
// The Prometheus exporter on a memory store: the series of its text exposition, and the served
// page scraped over HTTP with a plain socket (docs/observe.md#metrics).

#include "a2/prometheus.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "a2/a2.hpp"

namespace {

std::string text_of(prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

// GET /metrics from 127.0.0.1:port; the whole response.
std::string scrape(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  const std::string request = "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
  REQUIRE(::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size()));
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) response.append(buffer, n);
  ::close(fd);
  return response;
}

struct Exported {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  std::shared_ptr<a2::prometheus::Exporter> exporter =
      std::make_shared<a2::prometheus::Exporter>(registry);
  std::unique_ptr<a2::Store> store = a2::memory::open(
      {.observe = {.observer = exporter, .slow_operation = std::chrono::milliseconds(0)}});

  void work() {
    a2::NewEvent e;
    e.type = "t";
    (void)store->append("s", {e, e});
    (void)store->claim_available({.session_id = "s", .holder = "w", .ttl_ms = 1000});
    (void)store->complete_attempt({.session_id = "s", .index = 1, .attempt = 1});
    (void)store->fail_attempt({.session_id = "s", .index = 2, .attempt = 1, .max_failures = 1});
    REQUIRE_THROWS_AS(store->head(""), a2::InvalidArgument);
  }
};

TEST_CASE("the exporter counts operations, durations, work, round trips and log events", "[O8]") {
  Exported e;
  e.work();
  const std::string text = text_of(*e.registry);
  INFO(text);
  REQUIRE(has_line(text, R"(a2_operations_total{backend="memory",op="append",outcome="ok"} 1)"));
  REQUIRE(has_line(
      text, R"(a2_operations_total{backend="memory",op="claim_available",outcome="claimed"} 1)"));
  REQUIRE(has_line(
      text,
      R"(a2_operations_total{backend="memory",op="complete_attempt",outcome="completed"} 1)"));
  REQUIRE(has_line(
      text,
      R"(a2_operations_total{backend="memory",op="fail_attempt",outcome="dead_lettered"} 1)"));
  REQUIRE(has_line(
      text, R"(a2_operations_total{backend="memory",op="head",outcome="invalid_argument"} 1)"));
  REQUIRE(has_line(text, R"(a2_operation_duration_seconds_count{backend="memory",op="append"} 1)"));
  REQUIRE(has_line(
      text, R"(a2_operation_duration_seconds_bucket{backend="memory",op="append",le="10"} 1)"));
  REQUIRE(has_line(text, R"(a2_work_total{backend="memory",transition="claimed"} 2)"));
  REQUIRE(has_line(text, R"(a2_work_total{backend="memory",transition="completed"} 1)"));
  REQUIRE(has_line(text, R"(a2_work_total{backend="memory",transition="dead_lettered"} 1)"));
  REQUIRE(has_line(text, R"(a2_round_trips_total{backend="memory",op="append"} 0)"));
  REQUIRE(has_line(
      text, R"(a2_log_events_total{backend="memory",event="slow_operation",level="warning"} 5)"));
}

TEST_CASE("the exporter counts the spins of the stores with spin_wait, answered or not",
          "[O8][O13]") {
  Exported e;
  e.work();  // Memory never spins: no series yet.
  REQUIRE(text_of(*e.registry).find("a2_spin_waits_total{") == std::string::npos);
  // The records a Redis store with spin_wait reports (its calls' waits polled first): two
  // appends, four spins, three of them answered while polling; a read that did not spin.
  const auto record = [](std::string_view op, std::int64_t spins, std::int64_t answered) {
    return a2::OperationRecord{op,
                               "redis",
                               std::chrono::system_clock::now(),
                               std::chrono::microseconds(50),
                               "ok",
                               std::nullopt,
                               false,
                               1,
                               "s",
                               spins,
                               answered};
  };
  e.exporter->on_operation(record("append", 3, 2));
  e.exporter->on_operation(record("append", 1, 1));
  e.exporter->on_operation(record("read", 0, 0));
  const std::string text = text_of(*e.registry);
  INFO(text);
  REQUIRE(has_line(text, R"(a2_spin_waits_total{answered="yes",backend="redis",op="append"} 3)"));
  REQUIRE(has_line(text, R"(a2_spin_waits_total{answered="no",backend="redis",op="append"} 1)"));
  REQUIRE(text.find(R"(a2_spin_waits_total{answered="yes",backend="redis",op="read"})") ==
          std::string::npos);
}

TEST_CASE("the exposer serves the metrics page over HTTP", "[O8]") {
  Exported e;
  e.work();
  auto exposer = a2::prometheus::expose(e.registry, "127.0.0.1:0");
  const auto ports = exposer->GetListeningPorts();
  REQUIRE(ports.size() == 1);
  REQUIRE(ports[0] > 0);
  const std::string response = scrape(ports[0]);
  INFO(response);
  REQUIRE(response.rfind("HTTP/1.1 200", 0) == 0);
  REQUIRE(
      has_line(response, R"(a2_operations_total{backend="memory",op="append",outcome="ok"} 1)"));
  REQUIRE(has_line(response, R"(a2_work_total{backend="memory",transition="completed"} 1)"));
}

}  // namespace
