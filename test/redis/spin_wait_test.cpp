// SPDX-License-Identifier: MIT
// The spin wait on Redis (store option spin_wait, docs/semantics.md#S240 to #S242): calls answer as
// without it and their waits spin; a late reply is awaited asleep; the deadline holds; a store
// whose replies keep coming late pauses its spins; open() refuses a spin_wait out of range. The
// scenarios are conformance/support/spin_wait.hpp's, each on a server of its own (they pause it).
#include "support/spin_wait.hpp"

#include "support.hpp"

namespace a2::redis_test::spin_wait_test {
namespace {
using namespace std::chrono_literals;
namespace spin = a2::conformance::spin_wait;

spin::Backend backend_on(a2::test::RedisServer& server) {
  return {.open =
              [&server](const spin::StoreSettings& s) {
                auto o = options_for(server.url(), unique_prefix("spin"));
                o.clock = std::make_shared<ManualClock>(kT0);
                o.spin_wait = s.spin_wait;
                if (s.command_timeout) o.command_timeout = *s.command_timeout;
                o.observe.observer = s.observer;
                return a2::redis::open(o);
              },
          .pause = [&server] { server.pause(); },
          .resume = [&server] { server.resume(); },
          .margin = kMargin};
}

// Each scenario on a server of its own: they pause it.
void on_own_server(void (*scenario)(const spin::Backend&)) {
  a2::test::RedisServer server;
  scenario(backend_on(server));
}

TEST_CASE("redis: calls with spin_wait answer as without it, and their waits spin",
          "[redis][spin_wait][S240]") {
  on_own_server(spin::calls_spin_and_answer_alike);
}

TEST_CASE("redis: a reply later than spin_wait is awaited asleep", "[redis][spin_wait][S240]") {
  on_own_server(spin::a_late_reply_is_awaited_asleep);
}

TEST_CASE("redis: while a call is in flight another call's wait does not spin",
          "[redis][spin_wait][S241]") {
  on_own_server(spin::overlapping_calls_do_not_spin);
}

TEST_CASE("redis: a spinning call keeps its deadline", "[redis][spin_wait][S240]") {
  on_own_server(spin::a_spinning_call_keeps_its_deadline);
}

TEST_CASE("redis: a store whose replies come later than spin_wait pauses its spins",
          "[redis][spin_wait][S242]") {
  on_own_server(spin::late_replies_pause_the_stores_spins);
}

TEST_CASE("redis: open() refuses a spin_wait below 0 or above 10 ms", "[redis][spin_wait][S241]") {
  for (const auto bad : {std::chrono::microseconds(-1), std::chrono::microseconds(10001)}) {
    auto o = options_for(a2::test::RedisServer::shared().url(), unique_prefix("spin"));
    o.spin_wait = bad;
    CHECK_THROWS_AS(a2::redis::open(o), InvalidArgument);
    CHECK_THROWS_WITH(a2::redis::open(o),
                      Catch::Matchers::Contains("spin_wait must be between 0 and 10 ms"));
  }
}

}  // namespace
}  // namespace a2::redis_test::spin_wait_test
