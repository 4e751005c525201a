// SPDX-License-Identifier: MIT
// The wake-ups of writes, sent after commit by the store's notifier
// (docs/postgres-layout.md#notifications-and-feeds): what a raw LISTEN connection sees, their
// coalescing and the pacing of its rounds, a killed notifier connection, a store's own feeds
// woken in the process, and an earlier a2's connection (no a2.wake_after_commit), which still
// gets its NOTIFYs inside its transaction.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "a2/postgres.hpp"
#include "postgres/wake_sender.hpp"
#include "schema_store.hpp"
#include "servers/postgres_server.hpp"

namespace a2::postgres_test::wake_test {
namespace {

using a2::test::PostgresServer;
using namespace std::chrono_literals;

constexpr std::int64_t kT0 = 1'700'000'000'000;

using Fixture = a2::postgres_test::SchemaStore;
using a2::postgres_test::sql;

// A store whose feeds would wait a minute for their safety poll: a prompt wake is a NOTIFY's.
Fixture fresh() {
  return a2::postgres_test::open_schema_store({.tag = "wake", .t0 = kT0},
                                              {.pool_size = 8, .feed_safety_poll = 60s});
}

// A second store on the fixture's schema (another process's, as far as wake-ups go): its feeds
// learn of the fixture's writes only by NOTIFY.
std::unique_ptr<a2::Store> beside(const Fixture& f) {
  return a2::postgres::open(
      {.connection = f.connection, .schema = f.schema, .feed_safety_poll = 60s});
}

// The backend pid of the fixture's notifier connection, or 0 when it has none.
int notifier_pid(const Fixture& f) {
  auto rows = sql(f, "select pid from pg_stat_activity where application_name = 'a2 notifier " +
                         f.schema + "'");
  return rows.empty() ? 0 : rows[0][0].as<int>();
}

struct Notification {
  std::string channel;
  std::string payload;
  int pid = 0;
};

// A raw LISTEN connection on a2_events and a2_work, collecting what arrives.
class Listener {
 public:
  Listener()
      : conn_(PostgresServer::shared().connection()),
        events_(conn_, *this, "a2_events"),
        work_(conn_, *this, "a2_work") {}

  // Waits up to `limit` for notifications until `done(received)` holds; returns whether it does.
  template <class Done>
  bool wait_until(Done&& done, std::chrono::milliseconds limit = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done(received)) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      conn_.await_notification(0, 50'000);
    }
    return true;
  }
  // Collects for `period` (to see that nothing more comes).
  void collect(std::chrono::milliseconds period) {
    const auto deadline = std::chrono::steady_clock::now() + period;
    while (std::chrono::steady_clock::now() < deadline) conn_.await_notification(0, 20'000);
  }
  std::size_t count(const std::string& channel, const std::string& payload) const {
    std::size_t n = 0;
    for (const auto& r : received) n += r.channel == channel && r.payload == payload;
    return n;
  }

  std::vector<Notification> received;

 private:
  class Receiver final : public pqxx::notification_receiver {
   public:
    Receiver(pqxx::connection_base& conn, Listener& owner, const std::string& channel)
        : pqxx::notification_receiver(conn, channel), owner_(owner) {}
    void operator()(const std::string& payload, int pid) override {
      owner_.received.push_back({channel(), payload, pid});
    }

   private:
    Listener& owner_;
  };
  pqxx::connection conn_;
  Receiver events_;
  Receiver work_;
};

a2::NewEvent ev(std::string id, bool settled = false) {
  a2::NewEvent e;
  e.id = std::move(id);
  e.type = "t";
  e.settled = settled;
  return e;
}

a2::ChildEvent child(std::string id) {
  a2::ChildEvent c;
  c.id = std::move(id);
  c.type = "t";
  return c;
}

// Returns once `store` listens. Its listening thread starts with its first feed and, once it
// listens, wakes every feed to read (what was announced before is lost): a test that counts a
// feed's reads waits for that first, or the read may fall into a window it counts (it did under
// ThreadSanitizer on a busy machine). A feed of `session` (one nothing else uses) gets `writer`'s
// event only after it. It also leaves `writer`'s notifier connected.
void wait_listening(a2::Store& store, a2::Store& writer, const std::string& session) {
  auto feed = store.subscribe(session, 0);
  REQUIRE(feed->next(0ms).empty());
  (void)writer.append(session, {ev(session + "-e")});
  REQUIRE(feed->next(5s).size() == 1);
}

}  // namespace

TEST_CASE("a write's wake-ups come from the store's notifier after commit", "[postgres][wake]") {
  auto f = fresh();
  Listener listener;
  auto seen = [&](const std::string& channel, const std::string& s) {
    return listener.wait_until([&](const auto&) { return listener.count(channel, s) > 0; });
  };
  (void)f->append("a", {ev("a1")});
  REQUIRE(seen("a2_events", "a"));
  REQUIRE(seen("a2_work", "a"));
  const int pid = notifier_pid(f);
  REQUIRE(pid != 0);
  for (const auto& n : listener.received) CHECK(n.pid == pid);  // Sent by the notifier.

  SECTION("a completion with a child wakes the feeds and signals work") {
    auto claim = f->claim_available({.session_id = "a", .holder = "w", .ttl_ms = 60000});
    REQUIRE(claim.verdict == a2::ClaimVerdict::claimed);
    listener.received.clear();
    REQUIRE(f->complete_attempt({.session_id = "a",
                                 .index = 1,
                                 .attempt = claim.events.at(0).attempt_count,
                                 .events = {child("a2")}})
                .verdict == a2::CompleteVerdict::completed);
    REQUIRE(seen("a2_events", "a"));
    REQUIRE(seen("a2_work", "a"));
  }
  SECTION("a clear wakes the feeds only; a settled append wakes the feeds only") {
    listener.received.clear();
    REQUIRE(f->clear({.session_id = "a", .if_last_index = std::nullopt, .cause = std::nullopt})
                .cleared);
    (void)f->append("b", {ev("b1", true)});
    REQUIRE(seen("a2_events", "a"));
    REQUIRE(seen("a2_events", "b"));
    // A marker write: rounds go out in write order, so once it is seen the writes above were.
    (void)f->append("m", {ev("m1")});
    REQUIRE(seen("a2_work", "m"));
    CHECK(listener.count("a2_work", "a") == 0);
    CHECK(listener.count("a2_work", "b") == 0);
  }
  for (const auto& n : listener.received) CHECK(n.pid == pid);
  f->close();
}

TEST_CASE("a store's first write connects its notifier, whose warm-up sends nothing",
          "[postgres][wake]") {
  auto f = fresh();
  Listener listener;
  REQUIRE(notifier_pid(f) == 0);  // Opening a store does not start it.
  // A claim in an empty session: a write that owes no wake-up starts the notifier, which
  // connects and runs its warm-up round (rolled back) before any wake-up is owed.
  REQUIRE(f->claim_available({.session_id = "none", .holder = "w", .ttl_ms = 60000}).verdict ==
          a2::ClaimVerdict::settled);
  auto warmed = [&] {
    return sql(f, "select pid from pg_stat_activity where application_name = 'a2 notifier " +
                      f.schema + "' and state = 'idle' and query = 'ROLLBACK'");
  };
  int pid = 0;
  for (int i = 0; i < 250 && pid == 0; ++i) {
    auto rows = warmed();
    if (!rows.empty())
      pid = rows[0][0].as<int>();
    else
      std::this_thread::sleep_for(20ms);
  }
  REQUIRE(pid != 0);
  listener.collect(200ms);
  CHECK(listener.received.empty());  // The warm-up's notifications were rolled back.
  // The first wake-up goes out on that connection.
  (void)f->append("a", {ev("a1")});
  REQUIRE(listener.wait_until([&](const auto&) { return listener.count("a2_work", "a") == 1; }));
  for (const auto& n : listener.received) {
    CHECK(n.pid == pid);
    CHECK(n.payload == "a");
  }
  f->close();
}

TEST_CASE("a feed wakes for its session's notifications, not for another 32-byte session id",
          "[postgres][wake]") {
  auto f = fresh();
  auto feed = f->subscribe("s", 0);
  REQUIRE(feed->next(0ms).empty());
  // The reads (round trips of this thread) of one next() that waits 600 ms and gets nothing;
  // `notify` runs 200 ms into the wait, on a connection of its own.
  auto reads_of_next = [&](const std::string& notify) {
    std::thread other([&] {
      std::this_thread::sleep_for(200ms);
      if (!notify.empty()) (void)sql(f, notify);
    });
    const auto before = a2::detail::t_round_trips;
    const auto events = feed->next(600ms);
    const auto reads = a2::detail::t_round_trips - before;
    other.join();
    CHECK(events.empty());
    return reads;
  };
  (void)reads_of_next("");  // The LISTEN connection has started (it wakes every feed once).
  const auto quiet = reads_of_next("");  // The first read, and the one at the deadline.
  // Sessions no feed here follows, one of them an id of 32 hex digits (also the form of the
  // md5 that a2_notify sends for ids of 8000 bytes or more, which no feed follows): no read.
  CHECK(reads_of_next("select pg_notify('a2_events', '0123456789abcdef0123456789abcdef'), "
                      "pg_notify('a2_events', 'another')") == quiet);
  // Its own session: one read more.
  CHECK(reads_of_next("select pg_notify('a2_events', 's')") == quiet + 1);
  f->close();
}

TEST_CASE("a store's own write wakes its feeds at once, and its notifier's NOTIFY adds no read",
          "[postgres][wake]") {
  auto f = fresh();
  auto other = beside(f);
  auto mine = f->subscribe("s", 0);
  auto theirs = other->subscribe("s", 0);
  REQUIRE(mine->next(0ms).empty());
  REQUIRE(theirs->next(0ms).empty());
  // Both stores listen and f's notifier is connected.
  wait_listening(*f.store, *other, "warm-mine");
  wait_listening(*other, *f.store, "warm-theirs");
  // f's notifier's rounds take a second from now on: a prompt wake is the in-process one.
  sql(f,
      "create or replace function a2_notify(s text) returns void language plpgsql as $$ begin "
      "perform pg_sleep(1); perform pg_notify('a2_events', s); end $$");
  // One next() of `feed`, on a thread of its own, that is waiting before the caller writes.
  struct Waited {
    std::size_t events = 0;
    std::int64_t reads = 0;  // Its round trips (the feed's reads).
    std::chrono::steady_clock::time_point at;
  };
  auto waiting = [](a2::Feed& feed, std::chrono::milliseconds limit, Waited& out) {
    std::thread t([&feed, limit, &out] {
      const auto before = a2::detail::t_round_trips;
      out.events = feed.next(limit).size();
      out.reads = a2::detail::t_round_trips - before;
      out.at = std::chrono::steady_clock::now();
    });
    std::this_thread::sleep_for(200ms);  // It has read once and waits.
    return t;
  };
  {
    Waited m, t;
    auto mt = waiting(*mine, 10s, m);
    auto tt = waiting(*theirs, 10s, t);
    const auto start = std::chrono::steady_clock::now();
    (void)f->append("s", {ev("s1")});
    mt.join();
    tt.join();
    REQUIRE(m.events == 1);
    REQUIRE(t.events == 1);
    CHECK(m.at - start < 900ms);   // Woken in the process, before the notifier's round ended.
    CHECK(t.at - start >= 1000ms);  // The other store's feed hears of it by the NOTIFY.
  }
  // The reads of one next() that waits 2.5 s for nothing, quiet: the first and the last.
  Waited quiet;
  waiting(*mine, 2500ms, quiet).join();
  REQUIRE(quiet.events == 0);
  // The same wait while f's notifier's NOTIFY of a write that woke the feed already arrives.
  Waited t;
  auto tt = waiting(*theirs, 10s, t);
  (void)f->append("s", {ev("s2")});
  REQUIRE(mine->next(5s).size() == 1);
  Waited m;
  waiting(*mine, 2500ms, m).join();
  tt.join();
  REQUIRE(t.events == 1);
  CHECK(t.at < m.at);  // The NOTIFY arrived within the wait.
  CHECK(m.events == 0);
  CHECK(m.reads == quiet.reads);
  other->close();
  f->close();
}

// feed.next(timeout), and the round trips it made (its reads) in `reads`.
std::vector<a2::Event> next_within(a2::Feed& feed, std::chrono::milliseconds timeout,
                                   std::int64_t& reads) {
  const auto before = a2::detail::t_round_trips;
  auto got = feed.next(timeout);
  reads = a2::detail::t_round_trips - before;
  return got;
}

// A store's own appends and completions hand their events to its feeds
// (docs/postgres-layout.md#notifications-and-feeds): a feed whose cursor they continue returns
// them without a read; anything else (another store's event before them, a clear) is read as
// before. A feed that took every handed event waits without reading until something else is
// announced.
TEST_CASE("a store's own appends reach its feeds without a read, in order and without gaps",
          "[postgres][wake]") {
  // A session no other test uses: any store's NOTIFY of a session wakes the feeds of that
  // session id in every schema of the database, and this test counts the feed's reads.
  const std::string kSession = "handed-to-feeds";
  auto f = fresh();
  auto other = beside(f);
  auto feed = f->subscribe(kSession, 0);
  REQUIRE(feed->next(0ms).empty());
  wait_listening(*f.store, *other, kSession + "-warm-up");
  std::int64_t reads = -1;  // The round trips of the last next() (the feed's reads).
  auto next = [&] { return next_within(*feed, 5s, reads); };
  auto indexes = [](const std::vector<a2::Event>& events) {
    std::vector<std::int64_t> out;
    for (const auto& e : events) out.push_back(e.index);
    return out;
  };
  using Indexes = std::vector<std::int64_t>;
  // One event (a2_append_one) and a batch (a2_append).
  a2::NewEvent first = ev("a");
  first.payload = a2::Json{{"k", 1}};
  (void)f->append(kSession, {first});
  auto got = next();
  CHECK(indexes(got) == Indexes{1});
  CHECK(reads == 0);
  REQUIRE(got.size() == 1);
  CHECK(got[0].session_id == kSession);
  CHECK(got[0].id == "a");
  CHECK(got[0].type == "t");
  CHECK(got[0].payload == a2::Json{{"k", 1}});
  CHECK(got[0].created_at == kT0);
  (void)f->append(kSession, {ev("b"), ev("c", true)});
  got = next();
  CHECK(indexes(got) == Indexes{2, 3});
  CHECK(reads == 0);
  // Another store's event comes first: the next one handed here does not continue the cursor,
  // so the feed reads both.
  Listener listener;  // Hears both stores' notifiers.
  (void)other->append(kSession, {ev("d")});
  (void)f->append(kSession, {ev("e")});
  got = next();
  CHECK(indexes(got) == Indexes{4, 5});
  CHECK(reads == 1);
  // The other store's notification of s is out before the reads are counted below (its
  // notifier connects at its first write and may send late on a busy machine; the feed would
  // read again for it).
  REQUIRE(listener.wait_until([&](const std::vector<Notification>& received) {
    std::set<int> senders;
    for (const auto& n : received)
      if (n.channel == "a2_events" && n.payload == kSession) senders.insert(n.pid);
    return senders.size() >= 2;
  }));
  // And f's LISTEN has taken it: a notification of another store's, committed after it, has
  // reached f (notifications arrive in commit order). Sent is not taken: under load f's LISTEN
  // thread took it once while the drain's wait below ran (a second read there; tsan, CI).
  wait_listening(*f.store, *other, kSession + "-after-d");
  (void)f->append(kSession, {ev("f")});
  CHECK(indexes(next()) == Indexes{6});
  CHECK(reads == 0);
  // A completion's children are handed over too: complete_attempt (a2_complete_attempt), with
  // claim_next and batched (a2_complete_attempts).
  auto claimed = [&](std::int64_t index) {
    auto claim = f->claim_available(
        {.session_id = kSession, .holder = "w", .ttl_ms = 60000, .max_events = 1});
    REQUIRE(claim.verdict == a2::ClaimVerdict::claimed);
    REQUIRE(claim.events.at(0).index == index);
    return claim.events.at(0).attempt_count;
  };
  REQUIRE(f->complete_attempt({.session_id = kSession,
                               .index = 1,
                               .attempt = claimed(1),
                               .events = {child("c1")}})
              .verdict == a2::CompleteVerdict::completed);
  got = next();
  CHECK(indexes(got) == Indexes{7});
  CHECK(reads == 0);
  REQUIRE(got.size() == 1);
  CHECK(got[0].id == "c1");
  REQUIRE(f->complete_attempt({.session_id = kSession,
                               .index = 2,
                               .attempt = claimed(2),
                               .events = {child("c2"), child("c3")},
                               .claim_next = a2::ClaimNext{.holder = "w", .ttl_ms = 60000}})
              .verdict == a2::CompleteVerdict::completed);
  CHECK(indexes(next()) == Indexes{8, 9});
  CHECK(reads == 0);
  // claim_next claimed event 4; batched with event 5.
  const auto attempt5 = claimed(5);
  auto many = f->complete_attempts(
      {.session_id = kSession,
       .completions = {{.index = 4, .attempt = 1, .events = {child("c4")}},
                       {.index = 5, .attempt = attempt5, .events = {child("c5")}}}});
  REQUIRE(many.results.size() == 2);
  CHECK(indexes(next()) == Indexes{10, 11});
  CHECK(reads == 0);
  // A clear drops what was handed: the feed, behind the new boundary, reads and resumes at the
  // marker (event 12 is no longer part of the session's lifetime).
  (void)f->append(kSession, {ev("g")});
  REQUIRE(f->clear({.session_id = kSession, .if_last_index = std::nullopt, .cause = std::nullopt})
              .cleared);
  got = next();
  CHECK(indexes(got) == Indexes{13});
  CHECK(reads == 1);
  (void)f->append(kSession, {ev("h")});
  CHECK(indexes(next()) == Indexes{14});
  CHECK(reads == 0);
  // Its last read found events (the marker): the feed reads once more before it waits, as a
  // drain goes. Then, caught up, it waits without a read: in a next() that times out (the
  // safety poll is 60 s), and when the store's own append arrives while it waits; one read when
  // another store's event is announced.
  CHECK(next_within(*feed, 100ms, reads).empty());
  CHECK(reads == 1);
  CHECK(next_within(*feed, 100ms, reads).empty());
  CHECK(reads == 0);
  auto later = [&](auto write) {
    return std::thread([write] {
      std::this_thread::sleep_for(100ms);
      write();
    });
  };
  auto writer = later([&] { (void)f->append(kSession, {ev("i")}); });
  got = next();
  writer.join();
  CHECK(indexes(got) == Indexes{15});
  CHECK(reads == 0);
  writer = later([&] { (void)other->append(kSession, {ev("j")}); });
  got = next();
  writer.join();
  CHECK(indexes(got) == Indexes{16});
  CHECK(reads == 1);
  CHECK(next_within(*feed, 100ms, reads).empty());  // The drain's read.
  CHECK(reads == 1);
  // An event nothing announces (its wake-up left to a notifier that never sends it), then the
  // store's own: the handed one does not continue the cursor, so the feed reads both at once.
  sql(f,
      "set a2.wake_after_commit = on; "
      "select a2_append_one('handed-to-feeds', 1700000000000, 'k', 't', '{}'::jsonb)");
  (void)f->append(kSession, {ev("l")});
  got = next();
  CHECK(indexes(got) == Indexes{17, 18});
  CHECK(reads == 1);
  other->close();
  f->close();
}

TEST_CASE("writes between two rounds of the notifier share one wake-up", "[postgres][wake]") {
  auto f = fresh();
  // Rounds that take at least 50 ms (a2_notify is only called by the notifier, the write
  // functions of a store leave their wake-ups to it), so writes pile up behind each round.
  sql(f,
      "create or replace function a2_notify(s text) returns void language plpgsql as $$ begin "
      "perform pg_sleep(0.05); perform pg_notify('a2_events', s); end $$");
  Listener listener;
  auto feed = f->subscribe("s", 0);
  REQUIRE(feed->next(0ms).empty());
  constexpr int kThreads = 8;
  constexpr int kPerThread = 25;
  constexpr std::size_t kTotal = kThreads * kPerThread;
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t)
    writers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i)
        (void)f->append("s", {ev("e" + std::to_string(t) + "-" + std::to_string(i))});
    });
  for (auto& w : writers) w.join();
  // The feed (safety poll 60 s) gets every event promptly: the last commit was announced.
  std::size_t got = 0;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (got < kTotal && std::chrono::steady_clock::now() < deadline) got += feed->next(1s).size();
  REQUIRE(got == kTotal);
  REQUIRE(listener.wait_until([&](const auto&) { return listener.count("a2_events", "s") > 0; }));
  listener.collect(200ms);
  const auto wakes = listener.count("a2_events", "s");
  INFO("feed wake-ups for " << kTotal << " appends: " << wakes);
  CHECK(wakes >= 1);
  CHECK(wakes < kTotal / 2);
  // Each round sends each session once per channel.
  CHECK(listener.count("a2_work", "s") == wakes);
  f->close();
}

TEST_CASE("a notifier kept busy waits 3 ms between rounds, one after a pause sends at once",
          "[postgres][wake][S238]") {
  using a2::postgres::detail::RoundPacer;
  using us = std::chrono::microseconds;
  const RoundPacer::Time t = std::chrono::steady_clock::now();
  RoundPacer pacer;
  // The round of a wake-up queued at `queued`: it starts then, or at its turn if that is later.
  auto round = [&](us queued) {
    const auto start = std::max(t + queued, pacer.next());
    pacer.started(start, t + queued);
    return std::chrono::duration_cast<us>(start - t);
  };
  auto next = [&] { return std::chrono::duration_cast<us>(pacer.next() - t); };
  CHECK(round(0us) == 0us);
  CHECK(next() == 1000us);
  CHECK(round(200us) == 1000us);  // Queued before its turn: it waited.
  CHECK(next() == 4000us);
  CHECK(round(2000us) == 4000us);
  CHECK(next() == 7000us);
  CHECK(round(8000us) == 8000us);  // After its turn: at once.
  CHECK(next() == 9000us);
}

TEST_CASE("a killed notifier connection is replaced and later writes still wake a feed",
          "[postgres][wake]") {
  auto f = fresh();
  auto other = beside(f);  // Its feed hears of f's writes by f's notifier only.
  auto feed = other->subscribe("s", 0);
  REQUIRE(feed->next(0ms).empty());
  (void)f->append("s", {ev("s1")});
  REQUIRE(feed->next(5s).size() == 1);  // Read at once: the append had committed.
  int pid = 0;                          // The notifier connects for the append's round, meanwhile.
  for (int i = 0; i < 250 && pid == 0; ++i) {
    pid = notifier_pid(f);
    if (pid == 0) std::this_thread::sleep_for(20ms);
  }
  REQUIRE(pid != 0);
  REQUIRE(sql(f, "select pg_terminate_backend(" + std::to_string(pid) + ")")[0][0].as<bool>());
  // The next round fails on the dead connection and goes once more on a new one.
  for (int i = 2; i <= 3; ++i) {
    (void)f->append("s", {ev("s" + std::to_string(i))});
    const auto start = std::chrono::steady_clock::now();
    auto events = feed->next(10s);
    REQUIRE(events.size() == 1);
    CHECK(std::chrono::steady_clock::now() - start < 5s);  // Well before the 60 s safety poll.
  }
  int replaced = notifier_pid(f);  // Polled: a round may be replacing it right now (slow runs).
  for (int i = 0; i < 250 && (replaced == 0 || replaced == pid); ++i) {
    std::this_thread::sleep_for(20ms);
    replaced = notifier_pid(f);
  }
  CHECK(replaced != 0);
  CHECK(replaced != pid);
  other->close();
  f->close();
  // close() closed it (the backend leaves pg_stat_activity shortly after).
  const auto closed = std::chrono::steady_clock::now();
  while (notifier_pid(f) != 0 && std::chrono::steady_clock::now() - closed < 5s)
    std::this_thread::sleep_for(20ms);
  CHECK(notifier_pid(f) == 0);
}

TEST_CASE("an earlier a2's connection still gets the NOTIFYs in its transaction",
          "[postgres][wake]") {
  auto f = fresh();
  Listener listener;
  // A connection without a2.wake_after_commit calls a write function as an a2 of the previous
  // version does (its statement has no r_wake): the function notifies itself.
  pqxx::connection earlier(PostgresServer::shared().connection());
  pqxx::nontransaction tx(earlier);
  tx.exec("set search_path to \"" + f.schema + "\"");
  auto row = tx.exec("select r_index from a2_append_one('old', " + std::to_string(kT0) +
                     ", 'o1', 't', '{}'::jsonb)")[0];
  REQUIRE(row[0].as<std::int64_t>() == 1);
  REQUIRE(listener.wait_until([&](const auto&) {
    return listener.count("a2_events", "old") == 1 && listener.count("a2_work", "old") == 1;
  }));
  for (const auto& n : listener.received) CHECK(n.pid == earlier.backendpid());
  // Nothing was left for this store's notifier: it has not even connected.
  CHECK(notifier_pid(f) == 0);
  f->close();
}

// The builds between the two settings set a2.wake_after_commit but not a2.wake_by_reply, and
// read an append's wake-ups from a2.wake after a2_append_one (their append_one.sql and
// a2_append_group): they find both there. This a2's connections leave a2.wake alone and read them
// from the reply (a2_append_wake), a replay owing none.
TEST_CASE("an append's wake-ups are in a2.wake for a connection without a2.wake_by_reply",
          "[postgres][wake]") {
  auto f = fresh();
  pqxx::connection conn(PostgresServer::shared().connection());
  pqxx::nontransaction tx(conn);
  tx.exec("set search_path to \"" + f.schema + "\"");
  tx.exec("set a2.wake_after_commit = on");
  auto append = [&](const std::string& id) {
    return tx.exec1(
        "select r.r_index, current_setting('a2.wake', true), a2_append_wake(r.r_index) "
        "from a2_append_one('mid', " +
        std::to_string(kT0) + ", " + tx.quote(id) + ", 't', '{}'::jsonb) r");
  };
  auto row = append("m1");
  CHECK(row[0].as<std::int64_t>() == 1);
  CHECK(std::string(row[1].c_str()) == "3");
  CHECK(std::string(row[2].c_str()) == "3");
  tx.exec("set a2.wake_by_reply = on");
  row = append("m2");
  CHECK(row[0].as<std::int64_t>() == 2);
  CHECK(std::string(row[1].c_str()).empty());  // Unset in this (autocommit) transaction.
  CHECK(std::string(row[2].c_str()) == "3");
  row = append("m2");  // A replay: no new event, no wake-up.
  CHECK(row[0].is_null());
  CHECK(std::string(row[2].c_str()).empty());
  // The group reads them alike, for each request, on either kind of connection.
  for (const char* by_reply : {"on", "off"}) {
    INFO("a2.wake_by_reply = " << by_reply);
    tx.exec(std::string("set a2.wake_by_reply = ") + by_reply);
    const std::string n = by_reply[1] == 'n' ? "g" : "h";
    const auto rows = tx.exec(
        "select k, r_index, r_wake from a2_append_group(array['mid', 'mid', 'mid'], array[" +
        std::to_string(kT0) + ", " + std::to_string(kT0) + ", " + std::to_string(kT0) +
        "]::bigint[], array['" + n + "1', 'm1', '" + n +
        "2'], array['t', 't', 't'], "
        "'[{}, {}, {}]'::jsonb) order by k");
    REQUIRE(rows.size() == 3);
    CHECK(std::string(rows[0][2].c_str()) == "3");
    CHECK(rows[1][1].is_null());  // m1 replayed.
    CHECK(std::string(rows[1][2].c_str()).empty());
    CHECK(std::string(rows[2][2].c_str()) == "3");
  }
  f->close();
}

}  // namespace a2::postgres_test::wake_test
