// SPDX-License-Identifier: MIT
// The conformance seam for the Postgres backend: one scratch server per executable, a new
// schema per fixture.
#include <atomic>
#include <iostream>
#include <string>

#define CATCH_CONFIG_EXTERNAL_INTERFACES  // Catch::TestEventListenerBase
#include <catch2/catch.hpp>

#include "a2/postgres.hpp"
#include "harness.hpp"
#include "servers/postgres_server.hpp"

namespace a2::conformance {
namespace {

class PostgresBackend final : public Backend {
 public:
  std::string name() const override { return "postgres"; }
  Fixture fresh(const StoreSettings& settings) override {
    auto& server = a2::test::PostgresServer::shared();
    Fixture f{std::make_shared<ManualClock>(kT0), std::make_shared<SequentialIdSource>("g"),
              nullptr};
    f.store = a2::postgres::open({.connection = server.connection(),
                                  .schema = "t" + std::to_string(++next_schema_),
                                  .pool_size = 4,
                                  .statement_timeout = std::chrono::milliseconds(30000),
                                  .clock = f.clock,
                                  .ids = f.ids,
                                  .feed_safety_poll = std::chrono::milliseconds(1000),
                                  .clear_event_type = settings.clear_event_type});
    return f;
  }

 private:
  std::atomic<int> next_schema_{0};
};

// Shows the server log when a test failed, before the server (and its log) go away.
class ServerLogOnFailure final : public Catch::TestEventListenerBase {
 public:
  using Catch::TestEventListenerBase::TestEventListenerBase;
  void testRunEnded(const Catch::TestRunStats& stats) override {
    auto* server = a2::test::PostgresServer::shared_if_started();
    if (server && stats.totals.assertions.failed > 0)
      std::cerr << "---- postgres server log (" << server->log_path() << ") ----\n"
                << server->log() << "---- end of postgres server log ----\n";
  }
};

CATCH_REGISTER_LISTENER(ServerLogOnFailure)

}  // namespace

Backend& backend() {
  static PostgresBackend instance;
  return instance;
}

}  // namespace a2::conformance
