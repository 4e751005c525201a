// SPDX-License-Identifier: MIT
#pragma once

// A Postgres store in a schema of its own, for the tests of test/postgres/: each open gets a new
// schema "<tag><n>" on the shared scratch server (or the given one), a manual clock and
// sequential ids; sql() runs SQL in that schema on a connection of its own, as another client
// would (the original package, an operator).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <pqxx/pqxx>
#include <stdexcept>
#include <string>
#include <thread>

#include "a2/postgres.hpp"
#include "servers/postgres_server.hpp"

namespace a2::postgres_test {

struct SchemaStore {
  std::shared_ptr<a2::ManualClock> clock;
  std::shared_ptr<a2::SequentialIdSource> ids;
  std::string connection;
  std::string schema;
  std::unique_ptr<a2::Store> store;
  a2::Store* operator->() const { return store.get(); }
};

struct SchemaStoreSpec {
  std::string tag = "p";                // The schema's name is the tag and a number.
  std::int64_t t0 = 1'700'000'000'000;  // The clock's start (ms).
  std::string id_prefix = "g";          // Ids "<prefix>1", "<prefix>2", ...
  std::string connection{};             // Default: the shared scratch server.
};

// Opens a store with `options`; its connection (unless set), schema, clock and ids are set here.
inline SchemaStore open_schema_store(const SchemaStoreSpec& spec,
                                     a2::postgres::Options options = {}) {
  static std::atomic<int> n{0};
  SchemaStore f;
  f.clock = std::make_shared<a2::ManualClock>(spec.t0);
  f.ids = std::make_shared<a2::SequentialIdSource>(spec.id_prefix);
  f.connection =
      spec.connection.empty() ? a2::test::PostgresServer::shared().connection() : spec.connection;
  f.schema = spec.tag + std::to_string(++n);
  options.connection = f.connection;
  options.schema = f.schema;
  options.clock = f.clock;
  options.ids = f.ids;
  f.store = a2::postgres::open(options);
  return f;
}

// Runs `query` in the store's schema on a new connection; returns the rows.
inline pqxx::result sql(const SchemaStore& f, const std::string& query) {
  pqxx::connection conn(f.connection);
  pqxx::nontransaction tx(conn);
  tx.exec("set search_path to \"" + f.schema + "\"");
  return tx.exec(query);
}

// The locks a backend may wait for: the session lock (pg_advisory_xact_lock) or an event row.
enum class LockKind { session, row };

// How many backends of connections named `app` (application_name) wait for a lock of `kind`.
inline int lock_waiters(const std::string& app, LockKind kind) {
  pqxx::connection admin(a2::test::PostgresServer::shared().connection());
  pqxx::nontransaction tx(admin);
  const std::string events =
      kind == LockKind::session ? "('advisory')" : "('transactionid', 'tuple')";
  return tx
      .exec1("select count(*) from pg_stat_activity where application_name = " + tx.quote(app) +
             " and wait_event_type = 'Lock' and wait_event in " + events)[0]
      .as<int>();
}

// Calls `ready` every 5 ms until it returns true; throws (failing the test) after 20 s.
template <class F>
void await(F&& ready) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= until)
      throw std::runtime_error("the awaited condition did not come within 20 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace a2::postgres_test
