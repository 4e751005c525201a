// SPDX-License-Identifier: MIT
// The Redis backend's log events (docs/observe.md#O9): a script reload after SCRIPT FLUSH, a
// reconnect after CLIENT KILL, each reported to the observer of the operation that saw it.

#include "support.hpp"
#include "support/recorder.hpp"

namespace a2::redis_test {
namespace {
using namespace a2::conformance;

std::vector<SeenLog> events_named(const Recorder& r, const std::string& event) {
  std::vector<SeenLog> out;
  for (const auto& l : r.logs())
    if (l.event == event) out.push_back(l);
  return out;
}

Fixture observed_fixture(const std::shared_ptr<Recorder>& recorder) {
  auto options = options_for(a2::test::RedisServer::shared().url(), unique_prefix("observe"));
  options.pool_size = 1;
  options.observe.observer = recorder;
  Fixture f{std::make_shared<ManualClock>(kT0), std::make_shared<SequentialIdSource>("g"), nullptr};
  options.clock = f.clock;
  options.ids = f.ids;
  f.store = a2::redis::open(options);
  return f;
}

TEST_CASE("a write after SCRIPT FLUSH logs script_reload and makes three round trips", "[O9][O4]") {
  auto recorder = std::make_shared<Recorder>();
  auto f = observed_fixture(recorder);
  Raw raw;
  (void)f->append("s", evs(1));
  REQUIRE(raw.get({"SCRIPT", "FLUSH"}) == "OK");
  recorder->clear();
  (void)f->append("s", evs(1));
  auto reloads = events_named(*recorder, "script_reload");
  REQUIRE(reloads.size() == 1);
  REQUIRE(reloads[0].level == LogLevel::info);
  REQUIRE(reloads[0].backend == "redis");
  REQUIRE(reloads[0].message.rfind("a2 redis append: the server had no script ", 0) == 0);
  REQUIRE(recorder->last().round_trips == 3);  // EVALSHA, SCRIPT LOAD, EVALSHA.
  recorder->clear();
  (void)f->append("s", evs(1));
  REQUIRE(events_named(*recorder, "script_reload").empty());
  REQUIRE(recorder->last().round_trips == 1);
}

TEST_CASE("a call after CLIENT KILL logs reconnect and succeeds", "[O9]") {
  auto recorder = std::make_shared<Recorder>();
  auto f = observed_fixture(recorder);
  Raw raw;
  (void)f->append("s", evs(1));  // The pool's one connection is open and idle now.
  REQUIRE(raw.integer({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}) >= 1);
  recorder->clear();
  REQUIRE(f->head("s").head_index == 1);
  auto reconnects = events_named(*recorder, "reconnect");
  REQUIRE(reconnects.size() == 1);
  REQUIRE(reconnects[0].backend == "redis");
  REQUIRE(reconnects[0].message.rfind("a2 redis head: connected again", 0) == 0);
  REQUIRE(recorder->last().outcome == "ok");
  recorder->clear();
  (void)f->head("s");
  REQUIRE(events_named(*recorder, "reconnect").empty());
}

}  // namespace
}  // namespace a2::redis_test
