// SPDX-License-Identifier: MIT
// The conformance seam for the Postgres backend: one scratch server per executable, a new
// schema per fixture.
#include <atomic>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <pqxx/pqxx>

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
                                  .schema = take_schema(server),
                                  .pool_size = 4,
                                  .statement_timeout = std::chrono::milliseconds(30000),
                                  .clock = f.clock,
                                  .ids = store_ids(f, settings),
                                  .feed_safety_poll = std::chrono::milliseconds(1000),
                                  .clear_event_type = settings.clear_event_type,
                                  .observe = settings.observe});
    return f;
  }

  // Called when a test case has ended: its fixtures are gone, so its schemas can be reused.
  void recycle_schemas() {
    free_.insert(free_.end(), in_use_.begin(), in_use_.end());
    in_use_.clear();
  }

 private:
  // A schema of an ended test case, emptied (every table but a2_schema_version), or a new one.
  // Most fixtures thus open a schema that open() set up before, and open() skips schema.sql
  // (docs/postgres-layout.md#schema): a conformance run spends its time on the scenarios, not
  // on creating ~30 functions 500 times. A new schema per test case would isolate no better:
  // every scenario starts from empty tables either way.
  std::string take_schema(a2::test::PostgresServer& server) {
    std::string schema;
    if (free_.empty()) {
      schema = "t" + std::to_string(++next_schema_);
    } else {
      schema = free_.back();
      free_.pop_back();
      if (!cleaner_) cleaner_ = std::make_unique<pqxx::connection>(server.connection());
      pqxx::nontransaction tx(*cleaner_);
      tx.exec("set search_path to " + tx.quote_name(schema) +
              "; do $$ declare t text; begin"
              " for t in select tablename from pg_tables where schemaname = current_schema()"
              " and tablename <> 'a2_schema_version' loop execute format('delete from %I', t);"
              " end loop; end $$");
    }
    in_use_.push_back(schema);
    return schema;
  }

  std::atomic<int> next_schema_{0};
  std::vector<std::string> in_use_;
  std::vector<std::string> free_;
  std::unique_ptr<pqxx::connection> cleaner_;
};

PostgresBackend& postgres_backend() {
  static PostgresBackend instance;
  return instance;
}

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

class SchemaRecycler final : public Catch::TestEventListenerBase {
 public:
  using Catch::TestEventListenerBase::TestEventListenerBase;
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    postgres_backend().recycle_schemas();
    Catch::TestEventListenerBase::testCaseEnded(stats);
  }
};

CATCH_REGISTER_LISTENER(SchemaRecycler)

}  // namespace

Backend& backend() { return postgres_backend(); }

}  // namespace a2::conformance
