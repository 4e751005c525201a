// SPDX-License-Identifier: MIT
// Races of two writes of one session placed exactly with row locks held by a connection of the
// test (docs/postgres-layout.md#locking): each write must come wholly before or after the other.
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <pqxx/pqxx>
#include <string>
#include <thread>

#include "a2/postgres.hpp"
#include "schema_store.hpp"
#include "servers/postgres_server.hpp"
#include "support/support.hpp"

namespace a2::postgres_test::locking_test {
namespace {

using a2::postgres_test::await;
using a2::postgres_test::lock_waiters;
using a2::postgres_test::LockKind;
using a2::test::PostgresServer;
using namespace std::chrono_literals;

constexpr std::int64_t kT0 = 1'700'000'000'000;
constexpr std::int64_t kTtl = 30'000;

// S248: a redrive waits for a row another transaction holds; a clear of the session comes while
// it waits. The redrive holds the session lock, so the clear waits for it and the redrive's
// answer is of one instant: redriven, and pending (the event it made ready). Before, the retry
// read the boundary before the clear and has_pending after it: redriven but nothing pending.
TEST_CASE("a redrive and a clear of its session come one after the other",
          "[postgres][redrive][clear][S248]") {
  const std::string app = "a2_locking_redrive";
  auto f = a2::postgres_test::open_schema_store(
      {.tag = "locking",
       .t0 = kT0,
       .connection = PostgresServer::shared().connection() + " application_name=" + app});
  const std::string s = "s";
  (void)f->append(s, {a2::conformance::ev_id("e1")});
  REQUIRE(f->claim_available({.session_id = s, .holder = "w", .ttl_ms = kTtl}).verdict ==
          a2::ClaimVerdict::claimed);
  REQUIRE(f->fail_attempt({.session_id = s, .index = 1, .attempt = 1, .max_failures = 1}).verdict ==
          a2::FailVerdict::dead_lettered);

  pqxx::connection conn(PostgresServer::shared().connection());
  pqxx::work holder(conn);
  holder.exec("set local search_path to \"" + f.schema + "\"");
  holder.exec("select 1 from a2_events where session_id = 's' and idx = 1 for update");
  auto redriven = std::async(std::launch::async, [&] {
    return f->redrive({.session_id = s, .index = 1, .action = a2::RedriveAction::retry});
  });
  await([&] { return lock_waiters(app, LockKind::row) == 1; });
  auto cleared = std::async(std::launch::async, [&] { return f->clear({.session_id = s}); });
  // The clear waits for the session lock the redrive holds (before, it committed at once).
  await([&] {
    return lock_waiters(app, LockKind::session) == 1 ||
           cleared.wait_for(0s) == std::future_status::ready;
  });
  holder.commit();
  const auto r = redriven.get();
  const auto c = cleared.get();
  CHECK(r.redriven);
  CHECK(r.has_pending);
  CHECK(c.cleared);
  CHECK(c.clear_index == 2);
  CHECK(f->head(s).clear_index == 2);
  CHECK(f->dead_letters(s).empty());
}

}  // namespace
}  // namespace a2::postgres_test::locking_test
