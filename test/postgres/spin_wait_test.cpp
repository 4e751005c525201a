// SPDX-License-Identifier: MIT
// The spin wait on Postgres (store option spin_wait, docs/semantics.md#S240 to #S242): calls answer
// as without it and their waits spin; a late reply is awaited asleep; the deadline holds; a store
// whose replies keep coming late pauses its spins; open() refuses a spin_wait out of range. The
// scenarios are conformance/support/spin_wait.hpp's, on the shared scratch server (paused and
// resumed by the tests), each store in a schema of its own.
#include "support/spin_wait.hpp"

#include <catch2/catch.hpp>

#include "schema_store.hpp"

namespace a2::postgres_test::spin_wait_test {
namespace {
using namespace std::chrono_literals;
namespace spin = a2::conformance::spin_wait;

spin::Backend backend() {
  auto& server = a2::test::PostgresServer::shared();
  return {.open =
              [](const spin::StoreSettings& s) {
                a2::postgres::Options o;
                o.spin_wait = s.spin_wait;
                o.command_timeout = s.command_timeout;
                o.observe.observer = s.observer;
                return open_schema_store({.tag = "spin"}, o).store;
              },
          .pause = [&server] { server.pause(); },
          .resume = [&server] { server.resume(); },
          .margin = 750ms};
}

TEST_CASE("postgres: calls with spin_wait answer as without it, and their waits spin",
          "[postgres][spin_wait][S240]") {
  spin::calls_spin_and_answer_alike(backend());
}

TEST_CASE("postgres: a reply later than spin_wait is awaited asleep",
          "[postgres][spin_wait][S240]") {
  spin::a_late_reply_is_awaited_asleep(backend());
}

TEST_CASE("postgres: while a call is in flight another call's wait does not spin",
          "[postgres][spin_wait][S241]") {
  spin::overlapping_calls_do_not_spin(backend());
}

TEST_CASE("postgres: a spinning call keeps its deadline", "[postgres][spin_wait][S240]") {
  spin::a_spinning_call_keeps_its_deadline(backend());
}

TEST_CASE("postgres: a store whose replies come later than spin_wait pauses its spins",
          "[postgres][spin_wait][S242]") {
  spin::late_replies_pause_the_stores_spins(backend());
}

TEST_CASE("postgres: open() refuses a spin_wait below 0 or above 10 ms",
          "[postgres][spin_wait][S241]") {
  for (const auto bad : {std::chrono::microseconds(-1), std::chrono::microseconds(10001)}) {
    a2::postgres::Options o;
    o.spin_wait = bad;
    CHECK_THROWS_AS(open_schema_store({.tag = "spin"}, o), a2::InvalidArgument);
    CHECK_THROWS_WITH(open_schema_store({.tag = "spin"}, o),
                      Catch::Matchers::Contains("spin_wait must be between 0 and 10 ms"));
  }
}

}  // namespace
}  // namespace a2::postgres_test::spin_wait_test
