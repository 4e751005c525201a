// SPDX-License-Identifier: MIT
// Write groups (docs/postgres-layout.md#write-groups, docs/semantics.md#S220 to S237): appends
// of one event, claims without exclusions, completions without claim_next and complete_attempts
// calls (with or without claim_next) started while `append_groups` (or `work_groups`) writes of
// their kind are in flight wait, and go to the server together in one call and one
// transaction; each caller still gets its own answer, in one round trip, and a group the server
// rejects sends each request alone.
//
// A group is made deterministic by a lock every write of the kind takes: for appends the session
// lock (pg_advisory_xact_lock(hashtext(session))), for claims and completions the event rows
// (for update). A connection of the test holds it, the writes in flight wait for it on the
// server, and the writes started then queue in the store.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "a2/observe.hpp"
#include "a2/postgres.hpp"
#include "schema_store.hpp"
#include "servers/postgres_server.hpp"
#include "support/support.hpp"

namespace a2::postgres_test::write_groups_test {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t kT0 = 2'000'000;
// How far past its timeout a call may end on this (busy, shared) machine.
constexpr auto kMargin = 750ms;

std::string app_name() {
  static std::atomic<int> n{0};
  return "a2_groups_" + std::to_string(++n);
}

SchemaStore open_store(const std::string& app, a2::postgres::Options options = {}) {
  return open_schema_store(
      {.tag = "groups",
       .t0 = kT0,
       .connection = a2::test::PostgresServer::shared().connection() + " application_name=" + app},
      std::move(options));
}

a2::NewEvent ev(const std::string& id, std::int64_t n = 0) {
  a2::NewEvent e;
  e.id = id;
  e.type = "t";
  e.payload = {{"n", n}};
  return e;
}

// Holds the session lock of `session` (the one a2's writes take) on a connection of its own.
class SessionLock {
 public:
  SessionLock(const std::string& connection, const std::string& session)
      : conn_(connection), key_("hashtext(" + conn_.quote(session) + ")") {
    pqxx::nontransaction(conn_).exec("select pg_advisory_lock(" + key_ + ")");
  }
  void release() {
    if (held_) pqxx::nontransaction(conn_).exec("select pg_advisory_unlock(" + key_ + ")");
    held_ = false;
  }
  // Runs `statements` in a transaction of their own on the connection holding the lock (which a
  // session lock of the same key that they take on this connection does not wait for).
  void exec(const std::string& statements) {
    pqxx::work tx(conn_);
    tx.exec(statements);
    tx.commit();
  }

 private:
  pqxx::connection conn_;
  std::string key_;
  bool held_ = true;
};

// Holds the rows of `session`'s events (select ... for update) in a transaction of its own, on
// a connection of its own, until release().
class RowLock {
 public:
  RowLock(const SchemaStore& f, const std::string& session)
      : conn_(f.connection), tx_(std::make_unique<pqxx::work>(conn_)) {
    tx_->exec("set local search_path to \"" + f.schema + "\"");
    tx_->exec("select 1 from a2_events where session_id = " + tx_->quote(session) + " for update");
  }
  void release() {
    if (tx_) tx_->abort();
    tx_.reset();
  }

 private:
  pqxx::connection conn_;
  std::unique_ptr<pqxx::work> tx_;
};

// What a waiting statement waits for: a session lock, or a row another transaction holds.
// The session lock, a row, or either: calls of one session wait for a row only the first of
// them; the others wait for the session lock it holds (every write takes it first).
enum class Waits { session_lock, row, any };

// Waits (at most 20 s) until `n` backends of connections named `app` wait for a lock of the
// kind `waits`, running a statement whose text holds `fragment`.
void wait_for_lock_waiters(const std::string& connection, const std::string& app, int n,
                           const std::string& fragment, Waits waits = Waits::session_lock) {
  pqxx::connection admin(connection);
  pqxx::nontransaction tx(admin);
  const auto until = std::chrono::steady_clock::now() + 20s;
  long long waiting = 0;
  while (std::chrono::steady_clock::now() < until) {
    waiting =
        tx.exec1("select count(*) from pg_stat_activity where application_name = " + tx.quote(app) +
                 " and wait_event_type = 'Lock' and " +
                 (waits == Waits::session_lock ? "wait_event = 'advisory'"
                  : waits == Waits::row        ? "wait_event in ('transactionid', 'tuple')"
                                               : "true") +
                 " and query like '%' || " + tx.quote(fragment) + " || '%'")[0]
            .as<long long>();
    if (waiting >= n) return;
    std::this_thread::sleep_for(5ms);
  }
  std::string activity;
  for (const auto& row :
       tx.exec("select coalesce(wait_event_type, '-') || '/' || coalesce(wait_event, '-') || ' ' || "
               "state || ': ' || left(regexp_replace(query, '\\s+', ' ', 'g'), 160) from "
               "pg_stat_activity where application_name = " +
               tx.quote(app)))
    activity += std::string("\n  ") + row[0].c_str();
  FAIL("only " << waiting << " of " << n << " statements holding '" << fragment
               << "' wait; the store's connections:" << activity);
}

// One call of the store in a thread of its own: its answer or error, and the round trips it
// made.
template <class R>
class Async {
 public:
  explicit Async(std::function<R()> call)
      : thread_([this, call = std::move(call)] {
          started_ = true;
          const auto before = a2::detail::t_round_trips;
          try {
            result_ = call();
          } catch (const a2::Error& e) {
            error_ = e.what();
            code_ = e.code();
            if (const auto* u = dynamic_cast<const a2::Unavailable*>(&e))
              unknown_ = u->outcome_unknown();
          }
          round_trips_ = a2::detail::t_round_trips - before;
          ended_ = std::chrono::steady_clock::now();
        }) {}
  ~Async() { join(); }
  Async(const Async&) = delete;
  Async& operator=(const Async&) = delete;

  bool started() const { return started_; }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  // After join():
  const std::optional<R>& result() const { return result_; }
  const std::string& error() const { return error_; }
  a2::ErrorCode code() const { return code_; }
  bool unknown() const { return unknown_; }
  std::int64_t round_trips() const { return round_trips_; }
  std::chrono::steady_clock::time_point ended() const { return ended_; }

 private:
  std::optional<R> result_;
  std::string error_;
  a2::ErrorCode code_ = a2::ErrorCode::store_unavailable;
  bool unknown_ = false;
  std::int64_t round_trips_ = 0;
  std::chrono::steady_clock::time_point ended_{};
  std::atomic<bool> started_{false};
  std::thread thread_;
};

using Call = Async<a2::AppendResult>;

// An append of `event` to `session`, in a thread of its own.
std::unique_ptr<Call> append_call(a2::Store& store, std::string session, a2::NewEvent event) {
  return std::make_unique<Call>([&store, session = std::move(session), event = std::move(event)] {
    return store.append(session, {event});
  });
}

// Starts `calls` in threads of their own once the store's places in flight are taken, and
// returns once each has entered the store and had time to queue.
template <class R>
std::vector<std::unique_ptr<Async<R>>> queue_async(const std::vector<std::function<R()>>& calls) {
  std::vector<std::unique_ptr<Async<R>>> out;
  for (const auto& call : calls) out.push_back(std::make_unique<Async<R>>(call));
  for (const auto& c : out)
    while (!c->started()) std::this_thread::sleep_for(1ms);
  // From entering the store to the queue is a check of the request and a lock: nothing that
  // waits. (The queue is the store's own; no server state shows it.)
  std::this_thread::sleep_for(300ms);
  return out;
}

// Starts `events` appends (session, event) as queue_async() does.
std::vector<std::unique_ptr<Call>> queue_calls(
    a2::Store& store, const std::vector<std::pair<std::string, a2::NewEvent>>& events) {
  std::vector<std::function<a2::AppendResult()>> calls;
  for (const auto& request : events)
    calls.push_back([&store, session = request.first, event = request.second] {
      return store.append(session, {event});
    });
  return queue_async(calls);
}

// The rows of a2_events holding one of `ids` (the tests' ids need no quoting), with `columns`.
pqxx::result rows_holding(const SchemaStore& f, const std::vector<std::string>& ids,
                          const std::string& columns) {
  std::string list;
  for (const auto& id : ids) list += (list.empty() ? "'" : ",'") + id + "'";
  if (list.empty()) list = "null";
  return sql(f, "select " + columns + " from a2_events where event_id in (" + list + ")");
}

// The transaction ids (xmin) of the rows holding `ids`.
std::set<std::string> writers_of(const SchemaStore& f, const std::vector<std::string>& ids) {
  std::set<std::string> out;
  for (const auto& row : rows_holding(f, ids, "xmin::text")) out.insert(row[0].as<std::string>());
  return out;
}

// The settings of the tests under load: the default (the pool size), 2, 1 and 0 (off).
const std::vector<std::optional<std::size_t>> kGroupSettings = {std::nullopt, 2, 1, 0};

// The default: as many as the pool has connections, all of them taken by appends waiting on
// the server.
const std::size_t kInFlight =
    a2::postgres::Options{}.append_groups.value_or(a2::postgres::Options{}.pool_size);

// The default options: `kInFlight` appends on the blocked session `blocked`, each waiting on
// the server for the lock the test holds.
std::vector<std::unique_ptr<Call>> block_places(a2::Store& store, const SchemaStore& f,
                                                const std::string& app,
                                                const std::string& blocked) {
  std::vector<std::unique_ptr<Call>> holders;
  for (std::size_t i = 0; i < kInFlight; ++i)
    holders.push_back(append_call(store, blocked, ev(blocked + "-hold-" + std::to_string(i))));
  wait_for_lock_waiters(f.connection, app, static_cast<int>(kInFlight), "append_one");
  return holders;
}

TEST_CASE("appends queued behind appends in flight go to the server in one call",
          "[postgres][append_groups][S220]") {
  const std::string app = app_name();
  a2::postgres::Options options;
  options.feed_safety_poll = 60s;  // A prompt wake of a feed is a wake-up, not its poll.
  auto f = open_store(app, options);
  REQUIRE(kInFlight == 4);
  // Feeds of another store on the schema (another process, as far as wake-ups go: they learn
  // of the group's events by NOTIFY) and of the store itself (handed the events).
  auto other =
      a2::postgres::open({.connection = f.connection, .schema = f.schema, .feed_safety_poll = 60s});
  auto warm = other->subscribe("warm", 0);
  REQUIRE(warm->next(0ms).empty());
  (void)f->append("warm", {ev("warm-1")});
  REQUIRE(warm->next(5s).size() == 1);  // `other` listens.
  auto theirs = other->subscribe("a", 0);
  auto mine = f->subscribe("b", 0);
  REQUIRE(theirs->next(0ms).empty());
  REQUIRE(mine->next(0ms).empty());
  const std::string blocked = f.schema + "-blocked";  // Its lock key is the test's alone.
  SessionLock lock(f.connection, blocked);
  auto holders = block_places(*f.store, f, app, blocked);
  // Five sessions, one of them twice: its two events take consecutive indexes.
  std::vector<std::pair<std::string, a2::NewEvent>> requests = {
      {"a", ev("a-1", 1)}, {"b", ev("b-1", 2)}, {"c", ev("c-1", 3)},
      {"d", ev("d-1", 4)}, {"e", ev("e-1", 5)}, {"c", ev("c-2", 6)}};
  auto calls = queue_calls(*f.store, requests);
  lock.release();
  for (auto& h : holders) h->join();
  for (auto& c : calls) c->join();
  std::vector<std::string> ids;
  std::set<std::int64_t> c_indexes;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    INFO("request " << requests[i].second.id.value());
    const Call& c = *calls[i];
    REQUIRE(c.error() == "");
    REQUIRE(c.result().has_value());
    CHECK(c.round_trips() == 1);
    REQUIRE(c.result()->events.size() == 1);
    const auto& got = c.result()->events[0];
    CHECK(c.result()->has_pending);
    CHECK(got.id == requests[i].second.id.value());
    CHECK(got.session_id == requests[i].first);
    // The answer is the stored row.
    const auto stored = f->read(requests[i].first);
    bool found = false;
    for (const auto& e : stored)
      if (e.id == got.id) {
        found = true;
        CHECK(e.index == got.index);
        CHECK(e.created_at == got.created_at);
        CHECK(e.payload == got.payload);
        CHECK(e.type == got.type);
      }
    CHECK(found);
    if (requests[i].first == "c") c_indexes.insert(got.index);
    ids.push_back(got.id);
  }
  CHECK(c_indexes == std::set<std::int64_t>{1, 2});
  CHECK(f->read("c").size() == 2);
  // One transaction wrote the queued appends: the next append in flight took them all.
  CHECK(writers_of(f, ids).size() == 1);
  for (auto& h : holders) CHECK(h->error() == "");
  CHECK(f->read(blocked).size() == kInFlight);
  // Each request's wake-ups: the other store's feed by NOTIFY, this store's at once.
  CHECK(theirs->next(5s).size() == 1);
  CHECK(mine->next(5s).size() == 1);
}

TEST_CASE("a replay in an append group is answered in the group's call",
          "[postgres][append_groups][S221]") {
  const std::string app = app_name();
  auto f = open_store(app);
  const auto original = f->append("r", {ev("r-1", 7)}).events.at(0);
  // A failed attempt, so that the replayed row has more than an appended row's columns.
  const auto claimed = f->claim_available({.session_id = "r",
                                           .holder = "w \"1\"",
                                           .ttl_ms = 30000,
                                           .expires_at_ms = std::nullopt,
                                           .exclude_indexes = {},
                                           .max_events = std::nullopt});
  REQUIRE(claimed.events.size() == 1);
  REQUIRE(f->fail_attempt({.session_id = "r",
                           .index = original.index,
                           .attempt = 1,
                           .error = "line\n\"quoted\" \u00fc",
                           .max_failures = 3})
              .verdict == a2::FailVerdict::failed);
  const std::string blocked = f.schema + "-blocked";  // Its lock key is the test's alone.
  SessionLock lock(f.connection, blocked);
  auto holders = block_places(*f.store, f, app, blocked);
  auto calls = queue_calls(*f.store, {{"r", ev("r-1", 7)}, {"x", ev("x-1")}, {"y", ev("y-1")}});
  lock.release();
  for (auto& c : calls) c->join();
  for (const auto& c : calls) {
    REQUIRE(c->error() == "");
    CHECK(c->round_trips() == 1);
  }
  const auto& replay = calls[0]->result()->events;
  REQUIRE(replay.size() == 1);
  CHECK(replay[0].index == original.index);
  CHECK(replay[0].created_at == original.created_at);
  CHECK(replay[0].last_error == "line\n\"quoted\" \u00fc");
  const auto stored = f->read("r");
  REQUIRE(stored.size() == 1);
  CHECK(a2::conformance::to_json(replay[0]) == a2::conformance::to_json(stored[0]));
  CHECK(writers_of(f, {"x-1", "y-1"}).size() == 1);
}

TEST_CASE("when the server rejects an append group each request goes alone with its own answer",
          "[postgres][append_groups][S222]") {
  const std::string app = app_name();
  auto f = open_store(app);
  (void)f->append("owner", {ev("taken")});
  const auto original = f->append("r", {ev("r-1", 7)}).events.at(0);
  const std::string blocked = f.schema + "-blocked";  // Its lock key is the test's alone.
  SessionLock lock(f.connection, blocked);
  auto holders = block_places(*f.store, f, app, blocked);
  // "taken" belongs to another session: its append fails, and alone it fails the same way.
  auto calls = queue_calls(
      *f.store, {{"x", ev("x-1")}, {"thief", ev("taken")}, {"r", ev("r-1", 7)}, {"y", ev("y-1")}});
  lock.release();
  for (auto& c : calls) c->join();
  for (const auto& c : calls) CHECK(c->round_trips() == 2);  // The group's, then its own.
  CHECK(calls[1]->code() == a2::ErrorCode::partial_duplicate_batch);
  CHECK(calls[1]->error().find("already belongs to another session") != std::string::npos);
  CHECK_FALSE(calls[1]->result().has_value());
  for (const std::size_t i : {0u, 2u, 3u}) {
    INFO("request " << i);
    CHECK(calls[i]->error() == "");
    REQUIRE(calls[i]->result().has_value());
  }
  CHECK(calls[2]->result()->events.at(0).index == original.index);  // The replay.
  CHECK(f->read("x").size() == 1);
  CHECK(f->read("y").size() == 1);
  CHECK(f->read("r").size() == 1);
  CHECK(f->read("thief").empty());
  CHECK(f->read("owner").size() == 1);
}

// A stored event as JSON without its session, its id's first two bytes (the test's "g-" or
// "s-") cut.
a2::Json sideless(const a2::StoredEvent& e) {
  auto j = a2::conformance::to_json(e);
  j.erase("session_id");
  j["id"] = j.at("id").get<std::string>().substr(2);
  return j;
}

// Every column of the rows of `session` but session_id, with each event id's first two bytes
// (the test's "g-" or "s-") cut (an id the store chose, a clear's marker's, as "(store's)"), and
// those of the ids in returned_event_ids, in index order; then the session's a2_work entry.
std::vector<std::string> stored_as(const SchemaStore& f, const std::string& session) {
  std::vector<std::string> out;
  for (const auto& row :
       sql(f,
           "select (to_jsonb(e) - 'session_id' || jsonb_build_object('event_id', "
           "case when left(e.event_id, 2) in ('g-', 's-') then substr(e.event_id, 3) "
           "else '(store''s)' end, 'returned_event_ids', (select jsonb_agg(substr(r, 3)) "
           "from jsonb_array_elements_text(e.returned_event_ids) r)))::text "
           "from a2_events e where session_id = '" +
               session + "' order by idx"))
    out.push_back(row[0].as<std::string>());
  for (const auto& row :
       sql(f, "select 'work ' || coalesce((select next_at::text from a2_work where session_id = '" +
                  session + "'), 'none')"))
    out.push_back(row[0].as<std::string>());
  return out;
}

TEST_CASE("an append group stores what the same appends store one by one",
          "[postgres][append_groups][S233]") {
  const std::string app = app_name();
  auto f = open_store(app);
  // Sessions g-* get the group, s-* the same appends one by one. Before: b's event claimed (its
  // work entry at the lease's end, after the group's times), c's ready (its entry due), a new.
  for (const std::string side : {"g-", "s-"}) {
    (void)f->append(side + "b", {ev(side + "b-0")});
    (void)f->append(side + "c", {ev(side + "c-0")});
    REQUIRE(f->claim_available({.session_id = side + "b",
                                .holder = "w",
                                .ttl_ms = 30000,
                                .expires_at_ms = std::nullopt,
                                .exclude_indexes = {},
                                .max_events = std::nullopt})
                .events.size() == 1);
  }
  const std::string blocked = f.schema + "-blocked";  // Its lock key is the test's alone.
  SessionLock lock(f.connection, blocked);
  auto holders = block_places(*f.store, f, app, blocked);
  f.clock->set(kT0 + 10);
  auto first = queue_calls(*f.store, {{"g-a", ev("g-a-1", 1)}, {"g-b", ev("g-b-1", 2)}});
  f.clock->set(kT0 + 20);
  auto second = queue_calls(*f.store, {{"g-c", ev("g-c-1", 3)}, {"g-a", ev("g-a-2", 4)}});
  lock.release();
  for (auto& h : holders) h->join();
  for (const auto* calls : {&first, &second})
    for (const auto& c : *calls) {
      c->join();
      REQUIRE(c->error() == "");
      CHECK(c->round_trips() == 1);
    }
  REQUIRE(writers_of(f, {"g-a-1", "g-b-1", "g-c-1", "g-a-2"}).size() == 1);  // One group.
  f.clock->set(kT0 + 10);
  (void)f->append("s-a", {ev("s-a-1", 1)});
  (void)f->append("s-b", {ev("s-b-1", 2)});
  f.clock->set(kT0 + 20);
  (void)f->append("s-c", {ev("s-c-1", 3)});
  (void)f->append("s-a", {ev("s-a-2", 4)});
  for (const std::string session : {"a", "b", "c"}) {
    INFO("session " << session);
    const auto grouped = stored_as(f, "g-" + session);
    CHECK(grouped == stored_as(f, "s-" + session));
    CHECK(grouped.size() == 3);  // Two rows and the work entry.
  }
  // The work entries: a's at its first request's time, b's lowered from the lease's end, c's
  // left where it was.
  CHECK(stored_as(f, "g-a").back() == "work " + std::to_string(kT0 + 10));
  CHECK(stored_as(f, "g-b").back() == "work " + std::to_string(kT0 + 10));
  CHECK(stored_as(f, "g-c").back() == "work " + std::to_string(kT0));
}

TEST_CASE("an append group holding one new id twice goes alone, request by request",
          "[postgres][append_groups][S234]") {
  const std::string app = app_name();
  auto f = open_store(app);
  const std::string blocked = f.schema + "-blocked";  // Its lock key is the test's alone.
  SessionLock lock(f.connection, blocked);
  auto holders = block_places(*f.store, f, app, blocked);
  // Two callers append one new event to p (the same id and content, as a retry racing its
  // original does); two others one id to two sessions.
  auto calls = queue_calls(*f.store, {{"p", ev("dup-1", 1)},
                                      {"p", ev("dup-1", 1)},
                                      {"q", ev("dup-2")},
                                      {"r", ev("dup-2")},
                                      {"x", ev("x-1")}});
  lock.release();
  for (auto& c : calls) c->join();
  // One of q and r got dup-2; the other was told it belongs to another session.
  const bool q_won = calls[2]->result().has_value();
  const auto& won = q_won ? *calls[2] : *calls[3];
  const auto& lost = q_won ? *calls[3] : *calls[2];
  // The group's statement, then each request's own. Alone, q's and r's appends may run at once:
  // the one whose insert of dup-2 waited for the other's uncommitted row fails it and calls its
  // function again (S239), one statement more.
  for (const std::size_t i : {0u, 1u, 4u}) CHECK(calls[i]->round_trips() == 2);
  CHECK(won.round_trips() == 2);
  CHECK((lost.round_trips() == 2 || lost.round_trips() == 3));
  for (const std::size_t i : {0u, 1u, 4u}) {
    INFO("request " << i << ": " << calls[i]->error());
    REQUIRE(calls[i]->result().has_value());
    CHECK(calls[i]->result()->events.at(0).index == 1);
  }
  CHECK(calls[0]->result()->events.at(0).created_at ==
        calls[1]->result()->events.at(0).created_at);
  CHECK(f->read("p").size() == 1);
  CHECK(f->read("x").size() == 1);
  CHECK(lost.code() == a2::ErrorCode::partial_duplicate_batch);
  CHECK(lost.error().find("already belongs to another session") != std::string::npos);
  CHECK(f->read(q_won ? "q" : "r").size() == 1);
  CHECK(f->read(q_won ? "r" : "q").empty());
}

// An append whose id the store drew skips the probe of the id index, in a group the set path's
// guard (docs/postgres-layout.md#a2_append_one). The fixture's IdSource draws g1, g2, ...: the
// test draws one itself to learn where it stands, and a session holds one of the next three.
TEST_CASE("an append group of drawn ids, one of them stored, goes alone, request by request",
          "[postgres][append_groups][S244]") {
  const std::string app = app_name();
  auto f = open_store(app);
  const auto base = std::stoll(f.ids->next_id().substr(1));
  const std::string held = "g" + std::to_string(base + 2);
  (void)f->append("owner", {ev(held)});
  auto drawn_calls = [&](const std::vector<std::string>& sessions) {
    std::vector<std::pair<std::string, a2::NewEvent>> requests;
    for (const auto& session : sessions) {
      a2::NewEvent e = ev("unused");
      e.id.reset();  // The store draws it.
      requests.emplace_back(session, e);
    }
    return requests;
  };
  const std::string blocked = f.schema + "-blocked";  // Its lock key is the test's alone.
  {
    SessionLock lock(f.connection, blocked);
    auto holders = block_places(*f.store, f, app, blocked);
    // The three draw g<base+1> to g<base+3> in some order: one of them draws the held id.
    auto calls = queue_calls(*f.store, drawn_calls({"a", "b", "c"}));
    lock.release();
    for (auto& h : holders) h->join();
    for (auto& c : calls) c->join();
    int refused = 0;
    for (const auto& c : calls) {
      INFO("error: " << c->error());
      if (c->result().has_value()) {
        // The group's statement, then its own.
        CHECK(c->round_trips() == 2);
        CHECK(c->result()->events.at(0).index == 1);
        CHECK(c->result()->events.at(0).id != held);
      } else {
        ++refused;
        // The group's, its own without the probe, its own with it.
        CHECK(c->round_trips() == 3);
        CHECK(c->code() == a2::ErrorCode::partial_duplicate_batch);
        CHECK(c->error().find("event id '" + held + "' already belongs to another session") !=
              std::string::npos);
      }
    }
    CHECK(refused == 1);
    CHECK(f->read("a").size() + f->read("b").size() + f->read("c").size() == 2);
    CHECK(f->read("owner").size() == 1);
  }
  // Fresh drawn ids: one call, one transaction (another blocked session: the first one's
  // holders' ids are stored now).
  SessionLock lock(f.connection, blocked + "2");
  auto holders = block_places(*f.store, f, app, blocked + "2");
  auto calls = queue_calls(*f.store, drawn_calls({"d", "e", "f"}));
  lock.release();
  for (auto& h : holders) h->join();
  std::vector<std::string> ids;
  for (auto& c : calls) {
    c->join();
    REQUIRE(c->error() == "");
    CHECK(c->round_trips() == 1);
    ids.push_back(c->result()->events.at(0).id);
  }
  CHECK(writers_of(f, ids).size() == 1);
}

TEST_CASE("an append queued past pool_acquire_timeout fails with nothing sent",
          "[postgres][append_groups][deadline][S223]") {
  const std::string app = app_name();
  a2::postgres::Options options;
  options.pool_acquire_timeout = 300ms;
  auto f = open_store(app, options);
  const std::string blocked = f.schema + "-blocked";  // Its lock key is the test's alone.
  SessionLock lock(f.connection, blocked);
  auto holders = block_places(*f.store, f, app, blocked);
  // Queued behind appends waiting for a lock, it fails unsent.
  const auto took =
      a2::conformance::require_unsent([&] { (void)f->append("late", {ev("late-1")}); });
  CHECK(took >= 250ms);
  CHECK(took <= 300ms + kMargin);
  lock.release();
  for (auto& h : holders) {
    h->join();
    CHECK(h->error() == "");
  }
  CHECK(f->read("late").empty());
  CHECK(f->append("late", {ev("late-2")}).events.at(0).index == 1);
}

TEST_CASE("an append group whose connection is lost fails every member, outcome unknown",
          "[postgres][append_groups][S224]") {
  const std::string app = app_name();
  auto f = open_store(app);
  const std::string blocked = f.schema + "-blocked";
  const std::string blocked_too = f.schema + "-blocked-too";  // Before "q" and "w".
  SessionLock first(f.connection, blocked);
  SessionLock second(f.connection, blocked_too);
  auto holders = block_places(*f.store, f, app, blocked);
  auto calls =
      queue_calls(*f.store, {{blocked_too, ev("q-1")}, {"q", ev("q-2")}, {"w", ev("q-3")}});
  // The appends in flight finish; the next takes the queue and waits for the second lock.
  first.release();
  for (auto& h : holders) h->join();
  wait_for_lock_waiters(f.connection, app, 1, "append_group");
  {
    pqxx::connection admin(f.connection);
    pqxx::nontransaction tx(admin);
    tx.exec("select pg_terminate_backend(pid) from pg_stat_activity where application_name = " +
            tx.quote(app) + " and query like '%append_group%' and wait_event = 'advisory'");
  }
  for (auto& c : calls) c->join();
  for (const auto& c : calls) {
    INFO(c->error());
    CHECK_FALSE(c->result().has_value());
    CHECK(c->code() == a2::ErrorCode::store_unavailable);
    CHECK(c->unknown());
    CHECK(c->round_trips() == 1);
  }
  second.release();
  // The group's transaction ended with its backend: none of it was written.
  CHECK(f->read(blocked_too).empty());
  CHECK(f->read("q").empty());
  CHECK(f->read("w").empty());
  CHECK(f->append("q", {ev("q-4")}).events.at(0).index == 1);
}

TEST_CASE("close() fails queued appends at once, nothing sent", "[postgres][append_groups][S225]") {
  const std::string app = app_name();
  auto f = open_store(app);
  const std::string blocked = f.schema + "-blocked";
  SessionLock lock(f.connection, blocked);
  auto holders = block_places(*f.store, f, app, blocked);
  auto calls = queue_calls(*f.store, {{"x", ev("x-1")}, {"y", ev("y-1")}, {"z", ev("z-1")}});
  const auto closed_at = std::chrono::steady_clock::now();
  f->close();
  for (auto& c : calls) {
    c->join();
    INFO(c->error());
    CHECK_FALSE(c->result().has_value());
    CHECK(c->code() == a2::ErrorCode::store_unavailable);
    CHECK_FALSE(c->unknown());
    CHECK(c->error().find("closed") != std::string::npos);
    CHECK(c->round_trips() == 0);
    CHECK(c->ended() - closed_at < kMargin);
  }
  lock.release();
  for (auto& h : holders) h->join();  // Sent before the close: they end by their deadlines.
  auto rows = sql(f, "select count(*) from a2_events where session_id in ('x', 'y', 'z')");
  CHECK(rows[0][0].as<long long>() == 0);
  CHECK_THROWS_AS(f->append("x", {ev("x-2")}), a2::Unavailable);
}

// Grouped appends beside the other writes of the same sessions: a group holds the session locks
// of its requests until it commits, and claims, completions and clears take those locks and
// their rows in their own orders (docs/postgres-layout.md#locking). With the defaults, appender
// threads (their appends grouped) race workers claiming and completing on the same sessions
// and a thread clearing one of them: every call answers (no deadlock surfaces as
// store_unavailable), every acknowledged event is stored, and every session stays dense. One
// group is certain, not left to timing: while the race runs, the test holds the first session's
// lock until every place in flight waits for it, queues three appends of its own behind them,
// and lets go; those three go to the server as one group (with whatever appends of the
// appenders queued with them), among the racing calls.
TEST_CASE("appends in groups beside claims, completions and clears of the same sessions",
          "[postgres][append_groups][S220]") {
  const std::string app = app_name();
  auto f = open_store(app);
  constexpr int kSessions = 4;
  constexpr int kAppenders = 8;
  constexpr int kPerAppender = 40;
  constexpr int kWorkers = 3;
  auto session = [](int k) { return "m" + std::to_string(k); };
  std::vector<std::string> failures(kAppenders + kWorkers + 1);
  std::vector<std::vector<std::string>> acknowledged(kAppenders + kWorkers);
  std::atomic<int> appenders_left{kAppenders};
  std::atomic<int> completed{0};
  std::vector<std::thread> threads;
  SessionLock lock(f.connection, session(0));
  for (int t = 0; t < kAppenders; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int i = 0; i < kPerAppender; ++i) {
          const std::string id = "a" + std::to_string(t) + "-" + std::to_string(i);
          (void)f->append(session((t + i) % kSessions), {ev(id, i)});
          acknowledged[t].push_back(id);
        }
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
      --appenders_left;
    });
  for (int w = 0; w < kWorkers; ++w)
    threads.emplace_back([&, w] {
      const int slot = kAppenders + w;
      try {
        for (int round = 0; appenders_left > 0 || round < 20; ++round) {
          const std::string s = session((w + round) % kSessions);
          auto claim = f->claim_available(
              {.session_id = s, .holder = "w" + std::to_string(w), .ttl_ms = 60000});
          for (const auto& e : claim.events) {
            const std::string child = "c" + std::to_string(w) + "-" + std::to_string(round) + "-" +
                                      std::to_string(e.index);
            auto done = f->complete_attempt(
                {.session_id = s,
                 .index = e.index,
                 .attempt = e.attempt_count,
                 .events = {{child, "t", nullptr, std::nullopt, true, std::nullopt}}});
            if (done.verdict == a2::CompleteVerdict::completed) {
              acknowledged[slot].push_back(child);
              ++completed;
            }
          }
        }
      } catch (const std::exception& e) {
        failures[slot] = e.what();
      }
    });
  threads.emplace_back([&] {
    try {
      while (appenders_left > kAppenders / 2) std::this_thread::sleep_for(1ms);
      (void)f->clear({.session_id = session(kSessions - 1)});
    } catch (const std::exception& e) {
      failures.back() = e.what();
    }
  });
  // Every appender reaches the first session within four appends, and every worker within four
  // rounds (a claim takes the session lock first too), so every pooled connection ends up
  // waiting for its lock; appends started then queue.
  wait_for_lock_waiters(f.connection, app, static_cast<int>(kInFlight), "a2_");
  const std::vector<std::string> queued_ids = {"q-1", "q-2", "q-3"};
  // Sessions of their own, which no worker claims: a claim would rewrite the rows (their xmin).
  auto queued = queue_calls(
      *f.store, {{"q1", ev(queued_ids[0])}, {"q2", ev(queued_ids[1])}, {"q3", ev(queued_ids[2])}});
  lock.release();
  for (auto& c : queued) c->join();
  for (auto& th : threads) th.join();
  for (std::size_t i = 0; i < failures.size(); ++i) {
    INFO("thread " << i);
    CHECK(failures[i] == "");
  }
  for (const auto& c : queued) CHECK(c->error() == "");
  CHECK(completed > 0);
  // Every session dense from 1 (cleared lifetimes stay until reclaimed); every acknowledged
  // event stored once.
  for (const auto& row : sql(f,
                             "select session_id, count(*), min(idx), max(idx) from a2_events "
                             "group by session_id")) {
    INFO(row[0].c_str());
    CHECK(row[2].as<long long>() == 1);
    CHECK(row[3].as<long long>() == row[1].as<long long>());
  }
  std::size_t total = 0;
  for (const auto& ids : acknowledged) {
    total += ids.size();
    CHECK(rows_holding(f, ids, "count(*)")[0][0].as<std::size_t>() == ids.size());
  }
  CHECK(total >= static_cast<std::size_t>(kAppenders * kPerAppender));
  // The queued appends were stored, by one transaction: one group.
  CHECK(rows_holding(f, queued_ids, "count(*)")[0][0].as<std::size_t>() == queued_ids.size());
  CHECK(writers_of(f, queued_ids).size() == 1);
}

// S220 under load, with the defaults users run with (pool_size 4, append_groups the pool size)
// and with append_groups 2, 1 and 0: many threads, their own sessions and one shared session.
// Odd threads let the store draw their events' ids, so a group holds named ids, drawn ones or
// both, and skips its guard only when every id was drawn (S244).
TEST_CASE("many threads appending through append groups keep every session dense",
          "[postgres][append_groups][S220]") {
  for (const std::optional<std::size_t> groups : kGroupSettings) {
    INFO("append_groups " << (groups ? std::to_string(*groups) : "default"));
    a2::postgres::Options options;
    options.append_groups = groups;
    auto f = open_store(app_name(), options);
    constexpr int kThreads = 16;
    constexpr int kPerThread = 40;
    std::vector<std::thread> threads;
    std::vector<std::string> failures(kThreads);
    std::vector<std::vector<std::int64_t>> shared_indexes(kThreads);
    std::vector<std::int64_t> round_trips(kThreads, 0);
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        const std::string own = "own-" + std::to_string(t);
        auto event = [&](const std::string& id, std::int64_t n) {
          a2::NewEvent e = ev(id, n);
          if (t % 2 == 1) e.id.reset();  // The store draws it.
          return e;
        };
        try {
          for (int i = 0; i < kPerThread; ++i) {
            const auto before = a2::detail::t_round_trips;
            const auto mine = f->append(own, {event(own + "-" + std::to_string(i), i)});
            const auto shared = f->append(
                "shared", {event("shared-" + std::to_string(t) + "-" + std::to_string(i), 0)});
            round_trips[t] += a2::detail::t_round_trips - before;
            if (mine.events.at(0).index != i + 1)
              throw std::runtime_error(own + " got index " +
                                       std::to_string(mine.events.at(0).index));
            shared_indexes[t].push_back(shared.events.at(0).index);
          }
        } catch (const std::exception& e) {
          failures[t] = e.what();
        }
      });
    for (auto& th : threads) th.join();
    std::set<std::int64_t> all;
    for (int t = 0; t < kThreads; ++t) {
      INFO("thread " << t);
      REQUIRE(failures[t] == "");
      CHECK(round_trips[t] == 2 * kPerThread);
      for (std::size_t i = 1; i < shared_indexes[t].size(); ++i)
        CHECK(shared_indexes[t][i] > shared_indexes[t][i - 1]);
      all.insert(shared_indexes[t].begin(), shared_indexes[t].end());
      const auto own = f->read("own-" + std::to_string(t));
      REQUIRE(own.size() == kPerThread);
      for (int i = 0; i < kPerThread; ++i) CHECK(own[i].index == i + 1);
    }
    const auto shared = f->read("shared");
    REQUIRE(shared.size() == kThreads * kPerThread);
    for (std::size_t i = 0; i < shared.size(); ++i) CHECK(shared[i].index == std::int64_t(i + 1));
    CHECK(all.size() == shared.size());
  }
}

// Work groups (docs/postgres-layout.md#write-groups, docs/semantics.md#S228 to S232, S235 to S237):
// claims without exclusions, completions without claim_next and complete_attempts calls, each kind
// on its own, go together as appends do. Places in flight are taken by calls waiting on the server
// for rows the test holds (a claim and a completion lock event rows first).

// The default: as many claims, and as many completions, in flight as the pool has connections.
const std::size_t kWorkInFlight =
    a2::postgres::Options{}.work_groups.value_or(a2::postgres::Options{}.pool_size);

a2::ClaimRequest claim_of(const std::string& session,
                          std::optional<std::int64_t> max_events = std::nullopt) {
  return {.session_id = session,
          .holder = "w",
          .ttl_ms = 60000,
          .expires_at_ms = std::nullopt,
          .exclude_indexes = {},
          .max_events = max_events};
}

// A completion of `event` (claimed once) with one unsettled child `child`.
a2::CompleteRequest completion_of(const a2::StoredEvent& event, const std::string& child) {
  return {.session_id = event.session_id,
          .index = event.index,
          .attempt = event.attempt_count,
          .events = {{child, "t.child", {{"of", event.index}}, std::nullopt, false, std::nullopt}}};
}

// `session`'s events, claimed now by one claim (they must be claimable).
std::vector<a2::StoredEvent> claim_all(const SchemaStore& f, const std::string& session) {
  auto claim = f->claim_available(claim_of(session));
  REQUIRE(claim.verdict == a2::ClaimVerdict::claimed);
  return claim.events;
}

// Appends `kWorkInFlight` events to `blocked`, one call.
void append_blocked(const SchemaStore& f, const std::string& blocked) {
  std::vector<a2::NewEvent> events;
  for (std::size_t i = 0; i < kWorkInFlight; ++i)
    events.push_back(ev(blocked + "-" + std::to_string(i)));
  (void)f->append(blocked, events);
}

// Completions of the claimed events `held` (without children), one per place in flight, each
// waiting on the server for its row, which the test holds (RowLock); returns once all wait.
std::vector<std::unique_ptr<Async<a2::CompleteResult>>> block_completions(
    const SchemaStore& f, const std::string& app, const std::vector<a2::StoredEvent>& held) {
  REQUIRE(held.size() == kWorkInFlight);
  std::vector<std::unique_ptr<Async<a2::CompleteResult>>> holders;
  for (const auto& e : held)
    holders.push_back(std::make_unique<Async<a2::CompleteResult>>([&f, e] {
      return f->complete_attempt(
          {.session_id = e.session_id, .index = e.index, .attempt = e.attempt_count, .events = {}});
    }));
  wait_for_lock_waiters(f.connection, app, static_cast<int>(kWorkInFlight),
                        "complete_attempt: one call", Waits::any);
  return holders;
}

// Claims of `blocked`, one per place in flight, each waiting on the server for rows the test
// holds (RowLock); returns once all wait.
std::vector<std::unique_ptr<Async<a2::ClaimResult>>> block_claims(const SchemaStore& f,
                                                                  const std::string& app,
                                                                  const std::string& blocked) {
  std::vector<std::unique_ptr<Async<a2::ClaimResult>>> holders;
  for (std::size_t i = 0; i < kWorkInFlight; ++i)
    holders.push_back(std::make_unique<Async<a2::ClaimResult>>(
        [&f, blocked] { return f->claim_available(claim_of(blocked)); }));
  wait_for_lock_waiters(f.connection, app, static_cast<int>(kWorkInFlight), "a2_claim(",
                        Waits::any);
  return holders;
}

// How many of the rows holding `ids` transaction `xmin` wrote.
std::size_t written_by(const SchemaStore& f, const std::vector<std::string>& ids,
                       const std::string& xmin) {
  std::size_t n = 0;
  for (const auto& row : rows_holding(f, ids, "xmin::text"))
    if (row[0].as<std::string>() == xmin) ++n;
  return n;
}

TEST_CASE("claims queued behind claims in flight go to the server in one call, one per session",
          "[postgres][work_groups][S228]") {
  const std::string app = app_name();
  auto f = open_store(app);
  REQUIRE(kWorkInFlight == 4);
  const std::string blocked = f.schema + "-blocked";
  (void)f->append(blocked, {ev("blocked-1")});
  for (const std::string s : {"a", "b", "c"}) (void)f->append(s, {ev(s + "-1"), ev(s + "-2")});
  RowLock rows(f, blocked);
  auto holders = block_claims(f, app, blocked);
  // b and c whole, and a twice, one event each: a's second claim cannot join the first's group.
  auto calls = queue_async<a2::ClaimResult>({[&] { return f->claim_available(claim_of("a", 1)); },
                                             [&] { return f->claim_available(claim_of("b")); },
                                             [&] { return f->claim_available(claim_of("c")); },
                                             [&] { return f->claim_available(claim_of("a", 1)); }});
  rows.release();
  for (auto& h : holders) h->join();
  for (auto& c : calls) c->join();
  int blocked_claims = 0;
  for (const auto& h : holders) {
    REQUIRE(h->error() == "");
    if (h->result()->verdict == a2::ClaimVerdict::claimed) ++blocked_claims;
  }
  CHECK(blocked_claims == 1);  // The others found the event held: busy.
  std::set<std::int64_t> a_indexes;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    INFO("request " << i);
    const auto& c = *calls[i];
    REQUIRE(c.error() == "");
    CHECK(c.round_trips() == 1);
    REQUIRE(c.result()->verdict == a2::ClaimVerdict::claimed);
    const auto& events = c.result()->events;
    REQUIRE(events.size() == (i == 0 || i == 3 ? 1u : 2u));
    const auto stored = f->read(events.at(0).session_id);
    for (const auto& e : events) {
      // The answer is the stored row, claimed once by "w" until now + the lease.
      CHECK(e.attempt_count == 1);
      CHECK(e.claim_holder == "w");
      CHECK(e.claim_expires_at == kT0 + 60000);
      REQUIRE(e.index >= 1);
      REQUIRE(e.index <= static_cast<std::int64_t>(stored.size()));
      CHECK(a2::conformance::to_json(e) ==
            a2::conformance::to_json(stored[static_cast<std::size_t>(e.index - 1)]));
      if (e.session_id == "a") a_indexes.insert(e.index);
    }
  }
  CHECK(a_indexes == std::set<std::int64_t>{1, 2});
  // One transaction claimed b's, c's and one of a's events; a's other claim went alone, after.
  const auto group = writers_of(f, {"b-1", "b-2", "c-1", "c-2"});
  REQUIRE(group.size() == 1);
  CHECK(written_by(f, {"a-1", "a-2"}, *group.begin()) == 1);
  CHECK(writers_of(f, {"a-1", "a-2"}).size() == 2);
}

TEST_CASE("a claim group claims what the same claims claim one by one",
          "[postgres][work_groups][S235]") {
  const std::string app = app_name();
  auto f = open_store(app);
  // Sessions g-* get the group, s-* the same claims one by one. a: three ready events, claimed
  // with max_events 2; b: one held (lease of 30 s) and one ready; c: one held; d: one finished;
  // e: one event, a clear, one event; f: two events of lane L and one without a lane; h: one
  // delayed by 50 s.
  for (const std::string side : {"g-", "s-"}) {
    const auto id = [&](const std::string& rest) { return side + rest; };
    // Claims all of `session`'s ready events for another holder, for 30 s.
    const auto hold = [&](const std::string& session) {
      REQUIRE(f->claim_available({.session_id = session,
                                  .holder = "other",
                                  .ttl_ms = 30000,
                                  .expires_at_ms = std::nullopt,
                                  .exclude_indexes = {},
                                  .max_events = std::nullopt})
                  .verdict == a2::ClaimVerdict::claimed);
    };
    (void)f->append(id("a"), {ev(id("a-1")), ev(id("a-2")), ev(id("a-3"))});
    (void)f->append(id("b"), {ev(id("b-1"))});
    hold(id("b"));
    (void)f->append(id("b"), {ev(id("b-2"))});
    (void)f->append(id("c"), {ev(id("c-1"))});
    hold(id("c"));
    (void)f->append(id("d"), {ev(id("d-1"))});
    const auto d = claim_all(f, id("d"));
    REQUIRE(f->complete_attempt({.session_id = id("d"),
                                 .index = d.at(0).index,
                                 .attempt = d.at(0).attempt_count,
                                 .events = {}})
                .verdict == a2::CompleteVerdict::completed);
    (void)f->append(id("e"), {ev(id("e-1"))});
    REQUIRE(f->clear({.session_id = id("e")}).cleared);
    (void)f->append(id("e"), {ev(id("e-2"))});
    auto laned = [&](const std::string& rest, std::optional<std::string> lane) {
      auto e = ev(id(rest));
      e.lane = std::move(lane);
      return e;
    };
    (void)f->append(id("f"), {laned("f-1", "L"), laned("f-2", "L"), laned("f-3", std::nullopt)});
    auto delayed = ev(id("h-1"));
    delayed.available_at_ms = kT0 + 50000;
    (void)f->append(id("h"), {delayed});
  }
  const auto claim_at = [](const std::string& session) {
    return claim_of(session,
                    session.substr(2) == "a" ? std::optional<std::int64_t>(2) : std::nullopt);
  };
  const std::vector<std::string> names = {"a", "b", "c", "d", "e", "f", "h"};
  const std::string blocked = f.schema + "-blocked";
  (void)f->append(blocked, {ev("blocked-1")});
  RowLock rows(f, blocked);
  auto holders = block_claims(f, app, blocked);
  f.clock->set(kT0 + 10);
  std::vector<std::function<a2::ClaimResult()>> queued;
  for (const auto& name : names)
    queued.push_back([&f, &claim_at, name] { return f->claim_available(claim_at("g-" + name)); });
  auto calls = queue_async<a2::ClaimResult>(queued);
  rows.release();
  for (auto& h : holders) h->join();
  std::vector<std::string> claimed_ids;
  for (auto& c : calls) {
    c->join();
    REQUIRE(c->error() == "");
    CHECK(c->round_trips() == 1);
    for (const auto& e : c->result()->events) claimed_ids.push_back(e.id);
  }
  REQUIRE(writers_of(f, claimed_ids).size() == 1);  // One group.
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto& name = names[i];
    INFO("session " << name);
    const auto alone = f->claim_available(claim_at("s-" + name));
    const auto& grouped = *calls[i]->result();
    CHECK(grouped.verdict == alone.verdict);
    CHECK(grouped.retry_at == alone.retry_at);
    REQUIRE(grouped.events.size() == alone.events.size());
    for (std::size_t k = 0; k < grouped.events.size(); ++k)
      CHECK(sideless(grouped.events[k]) == sideless(alone.events[k]));
    CHECK(stored_as(f, "g-" + name) == stored_as(f, "s-" + name));
  }
  // What the claims were: a's first two events, b's ready one, c busy until its lease ends, d
  // settled, e's event of the new lifetime, f's first of lane L and the one without a lane, h
  // busy until it is due; the work entries as a2_claim leaves them.
  const auto indexes = [&](std::size_t i) {
    std::vector<std::int64_t> out;
    for (const auto& e : calls[i]->result()->events) out.push_back(e.index);
    return out;
  };
  CHECK(indexes(0) == std::vector<std::int64_t>{1, 2});
  CHECK(indexes(1) == std::vector<std::int64_t>{2});
  CHECK(calls[2]->result()->verdict == a2::ClaimVerdict::busy);
  CHECK(calls[2]->result()->retry_at == kT0 + 30000);
  CHECK(calls[3]->result()->verdict == a2::ClaimVerdict::settled);
  CHECK(indexes(4) == std::vector<std::int64_t>{3});
  CHECK(indexes(5) == std::vector<std::int64_t>{1, 3});
  CHECK(calls[6]->result()->verdict == a2::ClaimVerdict::busy);
  CHECK(calls[6]->result()->retry_at == kT0 + 50000);
  CHECK(stored_as(f, "g-a").back() == "work " + std::to_string(kT0));  // Lowered: stays.
  CHECK(stored_as(f, "g-b").back() == "work " + std::to_string(kT0 + 30000));
  CHECK(stored_as(f, "g-c").back() == "work " + std::to_string(kT0 + 30000));
  CHECK(stored_as(f, "g-d").back() == "work none");
  CHECK(stored_as(f, "g-e").back() == "work " + std::to_string(kT0 + 10 + 60000));
  CHECK(stored_as(f, "g-h").back() == "work " + std::to_string(kT0 + 50000));
}

TEST_CASE(
    "completions queued behind completions in flight go to the server in one call, one per "
    "session",
    "[postgres][work_groups][S229]") {
  const std::string app = app_name();
  a2::postgres::Options options;
  options.feed_safety_poll = 60s;  // A prompt wake of a feed is a wake-up, not its poll.
  auto f = open_store(app, options);
  // A feed of another store on the schema (it learns of the children by NOTIFY) and one of
  // the store itself (handed the children).
  auto other =
      a2::postgres::open({.connection = f.connection, .schema = f.schema, .feed_safety_poll = 60s});
  auto warm = other->subscribe("warm", 0);
  REQUIRE(warm->next(0ms).empty());
  (void)f->append("warm", {ev("warm-1")});
  REQUIRE(warm->next(5s).size() == 1);  // `other` listens.
  const std::string blocked = f.schema + "-blocked";
  append_blocked(f, blocked);
  (void)f->append("a", {ev("a-1"), ev("a-2")});
  (void)f->append("b", {ev("b-1")});
  (void)f->append("c", {ev("c-1")});
  const auto held = claim_all(f, blocked);
  const auto a = claim_all(f, "a");
  const auto b = claim_all(f, "b");
  const auto c = claim_all(f, "c");
  auto theirs = other->subscribe("b", 1);
  auto mine = f->subscribe("c", 1);
  REQUIRE(theirs->next(0ms).empty());
  REQUIRE(mine->next(0ms).empty());
  RowLock rows(f, blocked);
  auto holders = block_completions(f, app, held);
  const std::vector<std::string> children = {"a-c1", "b-c1", "c-c1", "a-c2"};
  auto calls = queue_async<a2::CompleteResult>(
      {[&] { return f->complete_attempt(completion_of(a.at(0), children[0])); },
       [&] { return f->complete_attempt(completion_of(b.at(0), children[1])); },
       [&] { return f->complete_attempt(completion_of(c.at(0), children[2])); },
       [&] { return f->complete_attempt(completion_of(a.at(1), children[3])); }});
  rows.release();
  for (auto& h : holders) h->join();
  for (auto& call : calls) call->join();
  for (const auto& h : holders) {
    REQUIRE(h->error() == "");
    CHECK(h->result()->verdict == a2::CompleteVerdict::completed);
  }
  std::set<std::int64_t> a_children;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    INFO("request " << i);
    const auto& call = *calls[i];
    REQUIRE(call.error() == "");
    CHECK(call.round_trips() == 1);
    REQUIRE(call.result()->verdict == a2::CompleteVerdict::completed);
    REQUIRE(call.result()->events.size() == 1);
    const auto& child = call.result()->events[0];
    CHECK(child.id == children[i]);
    // The answer is the stored row.
    const auto stored = f->read(child.session_id);
    REQUIRE(child.index >= 1);
    REQUIRE(child.index <= static_cast<std::int64_t>(stored.size()));
    CHECK(a2::conformance::to_json(child) ==
          a2::conformance::to_json(stored[static_cast<std::size_t>(child.index - 1)]));
    if (child.session_id == "a") a_children.insert(child.index);
  }
  CHECK(a_children == std::set<std::int64_t>{3, 4});
  // One transaction completed b's, c's and one of a's events; a's other completion went alone.
  const auto group = writers_of(f, {"b-c1", "c-c1"});
  REQUIRE(group.size() == 1);
  CHECK(written_by(f, {"a-c1", "a-c2"}, *group.begin()) == 1);
  CHECK(writers_of(f, {"a-c1", "a-c2"}).size() == 2);
  // Each request's wake-ups: the other store's feed by NOTIFY, this store's at once.
  CHECK(theirs->next(5s).size() == 1);
  CHECK(mine->next(5s).size() == 1);
  // The work index holds the children: a claim of each session gets its child.
  for (const std::string s : {"a", "b", "c"}) {
    INFO("session " << s);
    const auto page = f->find_work({});
    bool listed = false;
    for (const auto& w : page.sessions) listed = listed || w.session_id == s;
    CHECK(listed);
    CHECK(f->claim_available(claim_of(s)).verdict == a2::ClaimVerdict::claimed);
  }
}

TEST_CASE("a completion group stores what the same completions store one by one",
          "[postgres][work_groups][S236]") {
  const std::string app = app_name();
  auto f = open_store(app);
  // Sessions g-* complete in groups, s-* the same completions one by one, each of one claimed
  // event (lease of 60 s) but e's, whose first of two events of lane L is claimed. The first
  // group is plain (a: an unsettled child; b: a settled child and one delayed to t+40000; c: no
  // children; d: a settled child); the second is not (e: a parent of a lane; h: an unsettled
  // child; x: a stale attempt).
  const std::vector<std::string> names = {"a", "b", "c", "d", "e", "h", "x"};
  std::map<std::string, a2::StoredEvent> parents;
  for (const std::string side : {"g-", "s-"})
    for (const auto& name : names) {
      const std::string session = side + name;
      if (name == "e") {
        auto first = ev(session + "-1");
        auto second = ev(session + "-2");
        first.lane = "L";
        second.lane = "L";
        (void)f->append(session, {first, second});
      } else {
        (void)f->append(session, {ev(session + "-1")});
      }
      const auto claimed = claim_all(f, session);
      REQUIRE(claimed.size() == 1);
      parents[session] = claimed[0];
    }
  const auto completion = [&](const std::string& session) {
    const auto& parent = parents.at(session);
    const auto child = [&](const std::string& rest, bool settled,
                           std::optional<std::int64_t> available_at) {
      return a2::ChildEvent{session + rest, "t.child", {{"n", rest}},
                            std::nullopt,   settled,   available_at};
    };
    a2::CompleteRequest request{.session_id = session,
                                .index = parent.index,
                                .attempt = parent.attempt_count,
                                .events = {}};
    const auto name = session.substr(2);
    if (name == "a" || name == "e" || name == "h") request.events = {child("-c1", false, {})};
    if (name == "b") request.events = {child("-c1", true, {}), child("-c2", false, kT0 + 40000)};
    if (name == "d") request.events = {child("-c1", true, {})};
    if (name == "x") request.attempt += 1;
    return request;
  };
  f.clock->set(kT0 + 10);
  std::map<std::string, a2::CompleteResult> grouped;
  for (const std::vector<std::string>& group :
       {std::vector<std::string>{"a", "b", "c", "d"}, std::vector<std::string>{"e", "h", "x"}}) {
    const std::string blocked = f.schema + "-blocked-" + group[0];
    append_blocked(f, blocked);
    const auto held = claim_all(f, blocked);
    RowLock rows(f, blocked);
    auto holders = block_completions(f, app, held);
    std::vector<std::function<a2::CompleteResult()>> queued;
    for (const auto& name : group)
      queued.push_back(
          [&f, &completion, name] { return f->complete_attempt(completion("g-" + name)); });
    auto calls = queue_async<a2::CompleteResult>(queued);
    rows.release();
    for (auto& h : holders) h->join();
    std::vector<std::string> parent_ids;
    for (std::size_t i = 0; i < group.size(); ++i) {
      calls[i]->join();
      REQUIRE(calls[i]->error() == "");
      CHECK(calls[i]->round_trips() == 1);
      grouped.emplace(group[i], *calls[i]->result());
      if (group[i] != "x") parent_ids.push_back("g-" + group[i] + "-1");
    }
    CHECK(writers_of(f, parent_ids).size() == 1);  // One group.
  }
  for (const auto& name : names) {
    INFO("session " << name);
    const auto alone = f->complete_attempt(completion("s-" + name));
    const auto& got = grouped.at(name);
    CHECK(got.verdict == alone.verdict);
    REQUIRE(got.events.size() == alone.events.size());
    for (std::size_t k = 0; k < got.events.size(); ++k)
      CHECK(sideless(got.events[k]) == sideless(alone.events[k]));
    CHECK(stored_as(f, "g-" + name) == stored_as(f, "s-" + name));
  }
  for (const auto& name : {"a", "b", "c", "d", "e", "h"})
    CHECK(grouped.at(name).verdict == a2::CompleteVerdict::completed);
  CHECK(grouped.at("x").verdict == a2::CompleteVerdict::superseded);
  CHECK(grouped.at("b").events.size() == 2);
  CHECK(grouped.at("c").events.empty());
  // The work entries: lowered to the unsettled children's times (a, e, h at once, b when its
  // delayed child is due), or left at the claim's lease end.
  const auto lease_end = std::to_string(kT0 + 60000);
  CHECK(stored_as(f, "g-a").back() == "work " + std::to_string(kT0 + 10));
  CHECK(stored_as(f, "g-b").back() == "work " + std::to_string(kT0 + 40000));
  CHECK(stored_as(f, "g-c").back() == "work " + lease_end);
  CHECK(stored_as(f, "g-d").back() == "work " + lease_end);
  CHECK(stored_as(f, "g-e").back() == "work " + std::to_string(kT0 + 10));
  CHECK(stored_as(f, "g-x").back() == "work " + lease_end);
}

TEST_CASE(
    "a completion in a group whose session a clear passed while the group waited for its lock "
    "is superseded, as alone",
    "[postgres][work_groups][S237]") {
  const std::string app = app_name();
  auto f = open_store(app);
  std::map<std::string, a2::StoredEvent> parents;
  for (const std::string session : {"g-a", "g-b", "s-b"}) {
    (void)f->append(session, {ev(session + "-1")});
    parents[session] = claim_all(f, session).at(0);
  }
  const auto completion = [&](const std::string& session) {
    return completion_of(parents.at(session), session + "-c1");
  };
  const std::string blocked = f.schema + "-blocked";
  append_blocked(f, blocked);
  const auto held = claim_all(f, blocked);
  f.clock->set(kT0 + 10);
  RowLock rows(f, blocked);
  auto holders = block_completions(f, app, held);
  SessionLock b_lock(f.connection, "g-b");
  auto calls =
      queue_async<a2::CompleteResult>({[&] { return f->complete_attempt(completion("g-a")); },
                                       [&] { return f->complete_attempt(completion("g-b")); }});
  rows.release();
  for (auto& h : holders) h->join();
  // The group holds both parent rows and a's session lock, and waits for b's.
  wait_for_lock_waiters(f.connection, app, 1, "complete_group: one call");
  b_lock.exec("set local search_path to \"" + f.schema + "\"; select a2_clear('g-b', " +
              std::to_string(kT0 + 10) + ", null, null, null, 'marker-g-b', 'a2.clear')");
  b_lock.release();
  for (auto& call : calls) {
    call->join();
    REQUIRE(call->error() == "");
    CHECK(call->round_trips() == 1);
  }
  CHECK(calls[0]->result()->verdict == a2::CompleteVerdict::completed);
  CHECK(calls[0]->result()->events.size() == 1);
  CHECK(calls[1]->result()->verdict == a2::CompleteVerdict::superseded);
  CHECK(calls[1]->result()->events.empty());
  // Alone: the same clear, then the same completion.
  REQUIRE(f->clear({.session_id = "s-b"}).cleared);
  const auto alone = f->complete_attempt(completion("s-b"));
  CHECK(alone.verdict == a2::CompleteVerdict::superseded);
  CHECK(alone.events.empty());
  CHECK(stored_as(f, "g-b") == stored_as(f, "s-b"));
  CHECK(stored_as(f, "g-b").size() == 3);  // The event, the marker (no child), the work entry.
}

TEST_CASE("when the server rejects a completion group each request goes alone with its own answer",
          "[postgres][work_groups][S230]") {
  const std::string app = app_name();
  auto f = open_store(app);
  (void)f->append("owner", {ev("taken")});
  const std::string blocked = f.schema + "-blocked";
  append_blocked(f, blocked);
  for (const std::string s : {"x", "thief", "y"}) (void)f->append(s, {ev(s + "-1")});
  const auto held = claim_all(f, blocked);
  const auto x = claim_all(f, "x").at(0);
  const auto thief = claim_all(f, "thief").at(0);
  const auto y = claim_all(f, "y").at(0);
  RowLock rows(f, blocked);
  auto holders = block_completions(f, app, held);
  // "taken" belongs to another session: its completion fails, and alone it fails the same way.
  auto calls = queue_async<a2::CompleteResult>(
      {[&] { return f->complete_attempt(completion_of(x, "x-c")); },
       [&] { return f->complete_attempt(completion_of(thief, "taken")); },
       [&] { return f->complete_attempt(completion_of(y, "y-c")); }});
  rows.release();
  for (auto& h : holders) h->join();
  for (auto& call : calls) call->join();
  for (const auto& call : calls) CHECK(call->round_trips() == 2);  // The group's, then its own.
  CHECK(calls[1]->code() == a2::ErrorCode::partial_duplicate_batch);
  CHECK(calls[1]->error().find("already belongs to another event") != std::string::npos);
  CHECK_FALSE(calls[1]->result().has_value());
  for (const std::size_t i : {0u, 2u}) {
    INFO("request " << i);
    CHECK(calls[i]->error() == "");
    REQUIRE(calls[i]->result().has_value());
    CHECK(calls[i]->result()->verdict == a2::CompleteVerdict::completed);
  }
  CHECK(f->read("x").size() == 2);
  CHECK(f->read("y").size() == 2);
  // The thief's event stays claimed and unfinished; "taken" stays the owner's.
  const auto thief_rows = f->read("thief");
  REQUIRE(thief_rows.size() == 1);
  CHECK_FALSE(thief_rows[0].processed_at.has_value());
  CHECK(thief_rows[0].claim_holder == "w");
  CHECK(f->read("owner").size() == 1);
}

TEST_CASE(
    "complete_attempts calls queued behind others in flight go to the server in one call, one "
    "per session",
    "[postgres][work_groups][S232]") {
  const std::string app = app_name();
  auto f = open_store(app);
  const std::string blocked = f.schema + "-blocked";
  append_blocked(f, blocked);
  (void)f->append("a", {ev("a-1"), ev("a-2"), ev("a-3")});
  (void)f->append("b", {ev("b-1")});
  (void)f->append("c", {ev("c-1")});
  const auto held = claim_all(f, blocked);
  const auto a = claim_all(f, "a");
  const auto b = claim_all(f, "b");
  const auto c = claim_all(f, "c");
  const a2::ClaimNext next{
      .holder = "n", .ttl_ms = 60000, .expires_at_ms = std::nullopt, .max_events = 1};
  // Four completions with claim_next in flight, each waiting for its parent row.
  RowLock rows(f, blocked);
  std::vector<std::unique_ptr<Async<a2::CompleteManyResult>>> holders;
  for (const auto& e : held)
    holders.push_back(std::make_unique<Async<a2::CompleteManyResult>>([&f, e, next] {
      return f->complete_attempts(
          {.session_id = e.session_id,
           .completions = {{.index = e.index, .attempt = e.attempt_count, .events = {}}},
           .claim_next = next});
    }));
  wait_for_lock_waiters(f.connection, app, static_cast<int>(kWorkInFlight),
                        "complete_attempts, and complete_attempt with claim_next", Waits::any);
  const auto child = [](const a2::StoredEvent& e, const std::string& id) {
    return a2::Completion{
        .index = e.index, .attempt = e.attempt_count, .events = completion_of(e, id).events};
  };
  // a twice (its first two events together, then its third), b by complete_attempt with
  // claim_next, c without claim_next: a's second request cannot join the first's group.
  auto calls = queue_async<a2::CompleteManyResult>(
      {[&] {
         return f->complete_attempts(
             {.session_id = "a",
              .completions = {child(a.at(0), "a-c1"), child(a.at(1), "a-c2")},
              .claim_next = next});
       },
       [&] {
         auto request = completion_of(b.at(0), "b-c1");
         request.claim_next = next;
         auto one = f->complete_attempt(request);
         a2::CompleteManyResult out;
         out.next = std::move(one.next);
         one.next.reset();
         out.results.push_back(std::move(one));
         return out;
       },
       [&] {
         return f->complete_attempts(
             {.session_id = "c", .completions = {child(c.at(0), "c-c1")}, .claim_next = {}});
       },
       [&] {
         return f->complete_attempts(
             {.session_id = "a", .completions = {child(a.at(2), "a-c3")}, .claim_next = next});
       }});
  rows.release();
  for (auto& h : holders) h->join();
  for (auto& call : calls) call->join();
  for (const auto& h : holders) {
    REQUIRE(h->error() == "");
    REQUIRE(h->result()->results.size() == 1);
    CHECK(h->result()->results[0].verdict == a2::CompleteVerdict::completed);
  }
  const std::vector<std::vector<std::string>> children = {
      {"a-c1", "a-c2"}, {"b-c1"}, {"c-c1"}, {"a-c3"}};
  std::set<std::int64_t> a_claimed;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    INFO("request " << i);
    const auto& call = *calls[i];
    REQUIRE(call.error() == "");
    CHECK(call.round_trips() == 1);
    const auto& got = *call.result();
    REQUIRE(got.results.size() == children[i].size());
    for (std::size_t k = 0; k < got.results.size(); ++k) {
      CHECK(got.results[k].verdict == a2::CompleteVerdict::completed);
      REQUIRE(got.results[k].events.size() == 1);
      const auto& e = got.results[k].events[0];
      CHECK(e.id == children[i][k]);
      const auto stored = f->read(e.session_id);
      REQUIRE(e.index <= static_cast<std::int64_t>(stored.size()));
      // The stored row, before claim_next may have claimed it.
      const auto& row = stored[static_cast<std::size_t>(e.index - 1)];
      CHECK(row.id == e.id);
      CHECK(row.type == e.type);
      CHECK(row.payload == e.payload);
      CHECK(row.created_at == e.created_at);
      CHECK(a2::conformance::to_json(row)["cause"] == a2::conformance::to_json(e)["cause"]);
    }
    CHECK(got.next.has_value() == (i != 2));
    if (!got.next) continue;
    // claim_next took one of the session's new children, held by "n".
    REQUIRE(got.next->verdict == a2::ClaimVerdict::claimed);
    REQUIRE(got.next->events.size() == 1);
    CHECK(got.next->events[0].claim_holder == "n");
    if (i == 1) CHECK(got.next->events[0].id == "b-c1");
    if (i == 0 || i == 3) a_claimed.insert(got.next->events[0].index);
  }
  CHECK(a_claimed.size() == 2);  // a's two claims took different children.
  // One transaction completed b's, c's and one of a's requests' parents (a parent's row is
  // written by its completion only; a child may be claimed again by a later request); a's other
  // request went in another.
  const auto group = writers_of(f, {"b-1", "c-1"});
  REQUIRE(group.size() == 1);
  CHECK(written_by(f, {"a-1", "a-3"}, *group.begin()) == 1);
  CHECK(writers_of(f, {"a-1", "a-2"}).size() == 1);
  CHECK(writers_of(f, {"a-1", "a-3"}).size() == 2);
}

// S231 under load, with the defaults users run with (pool_size 4, work_groups the pool size) and
// with work_groups 2, 1 and 0: threads claiming and completing on sessions of their own and on
// one shared session, beside appends to the shared one and, halfway, a clear of it.
TEST_CASE("many threads claiming and completing through work groups keep every session dense",
          "[postgres][work_groups][S231]") {
  for (const std::optional<std::size_t> groups : kGroupSettings) {
    INFO("work_groups " << (groups ? std::to_string(*groups) : "default"));
    a2::postgres::Options options;
    options.work_groups = groups;
    auto f = open_store(app_name(), options);
    constexpr int kThreads = 16;
    constexpr int kCycles = 25;
    for (int t = 0; t < kThreads; ++t)
      (void)f->append("own-" + std::to_string(t), {ev("own-" + std::to_string(t) + "-0")});
    std::vector<std::thread> threads;
    std::vector<std::string> failures(kThreads);
    std::vector<std::vector<std::string>> acknowledged(kThreads);
    std::vector<std::int64_t> round_trips(kThreads, 0);
    std::atomic<int> shared_completed{0};
    std::atomic<int> cycles_done{0};
    std::string clear_failure;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        const std::string own = "own-" + std::to_string(t);
        try {
          for (int i = 1; i <= kCycles; ++i, ++cycles_done) {
            const auto before = a2::detail::t_round_trips;
            const auto claim = f->claim_available(claim_of(own));
            if (claim.verdict != a2::ClaimVerdict::claimed || claim.events.size() != 1 ||
                claim.events[0].index != i)
              throw std::runtime_error(own + ": cycle " + std::to_string(i) +
                                       " did not claim its event");
            const std::string child = own + "-" + std::to_string(i);
            const auto done = f->complete_attempt(completion_of(claim.events[0], child));
            round_trips[t] += a2::detail::t_round_trips - before;
            if (done.verdict != a2::CompleteVerdict::completed || done.events.size() != 1 ||
                done.events[0].index != i + 1)
              throw std::runtime_error(own + ": cycle " + std::to_string(i) + " did not complete");
            acknowledged[t].push_back(child);
            const std::string appended = "shared-" + std::to_string(t) + "-" + std::to_string(i);
            (void)f->append("shared", {ev(appended)});
            acknowledged[t].push_back(appended);
            const auto shared = f->claim_available(claim_of("shared", 1));
            for (const auto& e : shared.events) {
              const std::string shared_child = appended + "-c";
              auto request = completion_of(e, shared_child);
              request.events[0].settled = true;
              if (f->complete_attempt(request).verdict == a2::CompleteVerdict::completed) {
                acknowledged[t].push_back(shared_child);
                ++shared_completed;
              }
            }
          }
        } catch (const std::exception& e) {
          failures[t] = e.what();
        }
      });
    // Halfway, a clear of the shared session, among its grouped claims and completions.
    threads.emplace_back([&] {
      try {
        while (cycles_done < kThreads * kCycles / 2) std::this_thread::sleep_for(1ms);
        (void)f->clear({.session_id = "shared"});
      } catch (const std::exception& e) {
        clear_failure = e.what();
      }
    });
    for (auto& th : threads) th.join();
    CHECK(clear_failure == "");
    for (int t = 0; t < kThreads; ++t) {
      INFO("thread " << t);
      REQUIRE(failures[t] == "");
      CHECK(round_trips[t] == 2 * kCycles);
      const auto own = f->read("own-" + std::to_string(t));
      REQUIRE(own.size() == kCycles + 1);
      for (int i = 0; i <= kCycles; ++i) {
        CHECK(own[static_cast<std::size_t>(i)].index == i + 1);
        CHECK(own[static_cast<std::size_t>(i)].processed_at.has_value() == (i < kCycles));
      }
      CHECK(rows_holding(f, acknowledged[t], "count(*)")[0][0].as<std::size_t>() ==
            acknowledged[t].size());
    }
    CHECK(shared_completed > 0);
    // Dense from 1 across both lifetimes (the cleared one stays until reclaimed).
    const auto shared = sql(f,
                            "select count(*), min(idx), max(idx), count(*) filter (where "
                            "event_type = 'a2.clear') from a2_events where session_id = 'shared'");
    CHECK(shared[0][1].as<long long>() == 1);
    CHECK(shared[0][2].as<long long>() == shared[0][0].as<long long>());
    CHECK(shared[0][3].as<long long>() == 1);
  }
}

}  // namespace
}  // namespace a2::postgres_test::write_groups_test
