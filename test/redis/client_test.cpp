// SPDX-License-Identifier: MIT
// open(): url parsing, option checks, the PING check; close() and the pool.
// clang-format off
// First: Catch2 listeners need CATCH_CONFIG_EXTERNAL_INTERFACES at Catch2's first include.
#include "servers/redis_log_listener.hpp"
// clang-format on

#include "redis/client.hpp"

#include <thread>

#include "support.hpp"

namespace a2::redis_test {
namespace {
using a2::conformance::ev;
using a2::conformance::evs;
using a2::conformance::require_error;
using a2::redis::detail::parse_url;

TEST_CASE("open parses redis:// and unix:// urls", "[redis][open]") {
  auto e = parse_url("redis://127.0.0.1:6390/3");
  CHECK(e.host == "127.0.0.1");
  CHECK(e.port == 6390);
  CHECK(e.db == 3);
  CHECK(e.unix_path.empty());
  e = parse_url("redis://:s%40cret@cache.local");
  CHECK(e.host == "cache.local");
  CHECK(e.port == 6379);
  CHECK(e.password == "s@cret");
  CHECK(e.user.empty());
  e = parse_url("redis://app:pw@[::1]:7000");
  CHECK(e.host == "::1");
  CHECK(e.port == 7000);
  CHECK(e.user == "app");
  CHECK(e.password == "pw");
  e = parse_url("unix:///run/redis/redis.sock?db=2");
  CHECK(e.unix_path == "/run/redis/redis.sock");
  CHECK(e.db == 2);
}

TEST_CASE("open rejects a malformed url or prefix with InvalidArgument", "[redis][open]") {
  for (std::string url : {"http://x", "redis://", "redis://h:0", "redis://h:99999", "redis://h:x",
                          "redis://h/db", "unix://relative", "redis://h:", "redis://[::1"}) {
    INFO(url);
    require_error(ErrorCode::invalid_argument, [&] { (void)a2::redis::open(options_for(url)); });
  }
  auto url = a2::test::RedisServer::shared().url();
  for (std::string prefix :
       {std::string(), std::string("a2:"), std::string("a b"), std::string("a\nb"),
        // A ':' inside would let prefix "ov:x" + session "y" spell prefix "ov" + session "x:y".
        std::string("ov:x"), std::string(":a"), std::string("a:b:c")}) {
    INFO(prefix);
    require_error(ErrorCode::invalid_argument,
                  [&] { (void)a2::redis::open(options_for(url, prefix)); });
  }
  require_error(ErrorCode::invalid_argument, [&] {
    auto o = options_for(url, "p");
    o.pool_size = 0;
    (void)a2::redis::open(o);
  });
  require_error(ErrorCode::invalid_argument, [&] {
    auto o = options_for(url, "p");
    o.write_connections = 65;
    (void)a2::redis::open(o);
  });
  auto o = options_for(url, "p");
  o.write_connections = 64;
  CHECK_NOTHROW(a2::redis::open(o));
}

TEST_CASE("open throws Unavailable when nothing listens", "[redis][open]") {
  int port = a2::test::free_port();
  require_error(ErrorCode::store_unavailable, [&] {
    auto o = options_for("redis://127.0.0.1:" + std::to_string(port));
    o.connect_timeout = std::chrono::milliseconds(500);
    (void)a2::redis::open(o);
  });
}

TEST_CASE("open authenticates with the url's user and password", "[redis][open]") {
  Raw raw;
  const std::string user = unique_prefix("user");
  REQUIRE(raw.get({"ACL", "SETUSER", user, "on", ">pw1", "~*", "&*", "+@all"}) == "OK");
  auto port = std::to_string(a2::test::RedisServer::shared().port());
  auto f = open_fixture(unique_prefix("auth"), "redis://" + user + ":pw1@127.0.0.1:" + port);
  CHECK(f->append("s", evs(1)).events.at(0).index == 1);
  require_error(ErrorCode::store_unavailable, [&] {
    (void)open_fixture(unique_prefix("auth"), "redis://" + user + ":wrong@127.0.0.1:" + port);
  });
  raw.cmd({"ACL", "DELUSER", user});
}

TEST_CASE("open selects the url's database", "[redis][open]") {
  auto port = std::to_string(a2::test::RedisServer::shared().port());
  const std::string prefix = unique_prefix("db");
  auto f = open_fixture(prefix, "redis://127.0.0.1:" + port + "/5");
  (void)f->append("s", evs(2));
  Raw raw;
  CHECK_FALSE(raw.get({"GET", prefix + ":s:count"}).has_value());
  raw.cmd({"SELECT", "5"});
  CHECK(raw.get({"GET", prefix + ":s:count"}) == "2");
}

TEST_CASE("close is idempotent and every later operation throws Unavailable", "[redis][S151]") {
  auto f = open_fixture(unique_prefix("close"));
  (void)f->append("s", evs(1));
  auto feed = f->subscribe("s", 0);
  f->close();
  f->close();
  require_error(ErrorCode::store_unavailable, [&] { (void)f->read("s"); });
  require_error(ErrorCode::store_unavailable, [&] { (void)f->append("s", evs(1)); });
  require_error(ErrorCode::store_unavailable,
                [&] { (void)feed->next(std::chrono::milliseconds(100)); });
}

TEST_CASE("a store with one pooled connection serves many threads", "[redis][pool]") {
  auto f = open_fixture(unique_prefix("pool"), "", 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) (void)f->append("s", {ev()});
    });
  for (auto& t : threads) t.join();
  auto rows = f->read("s");
  REQUIRE(rows.size() == 120);
  for (std::size_t i = 0; i < rows.size(); ++i)
    CHECK(rows[i].index == static_cast<std::int64_t>(i + 1));
}

TEST_CASE("a connection the server dropped while idle is replaced before any call uses it",
          "[redis][pool]") {
  auto f = open_fixture(unique_prefix("drop"), "", 1);
  (void)f->append("s", evs(1));
  Raw raw;
  // The server drops every other client: the store's one idle pooled connection is now dead.
  REQUIRE(raw.integer({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}) >= 1);
  // Seen dead before use (its socket reads end of file): a new connection serves the call.
  CHECK(f->append("s", evs(1)).events.at(0).index == 2);
  REQUIRE(f->read("s").size() == 2);
}

TEST_CASE("a call whose connection fails after sending reports the outcome unknown",
          "[redis][pool]") {
  a2::test::RedisServer server;
  auto o = options_for(server.url(), unique_prefix("inflight"));
  o.pool_size = 1;
  o.command_timeout = std::chrono::milliseconds(500);
  auto store = a2::redis::open(o);
  (void)store->append("s", evs(1));
  server.pause();
  try {
    (void)store->append("s", evs(1));
    FAIL("the append on a stopped server succeeded");
  } catch (const Unavailable& e) {
    INFO(e.what());
    CHECK(e.outcome_unknown());  // The command was written before the failure showed.
    CHECK(std::string(e.what()).find("outcome unknown") != std::string::npos);
  }
  server.resume();
  // The server ran the append once it continued; the broken connection was discarded.
  REQUIRE(store->read("s").size() == 2);
  CHECK(store->append("s", evs(1)).events.at(0).index == 3);
}

}  // namespace
}  // namespace a2::redis_test
