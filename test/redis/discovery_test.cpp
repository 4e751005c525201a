// SPDX-License-Identifier: MIT
// Work discovery on Redis (docs/redis-layout.md#work-index): the index p:work, what each write
// costs to keep it, find_work's cost and order, the safety sweep on data the original package
// wrote, and the work watch (PSUBSCRIBE, the sweep inside wait(), reconnection).
#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>
#include <thread>

#include "support.hpp"

namespace a2::redis_test {
namespace {
using namespace a2::conformance;
using namespace std::chrono_literals;

constexpr std::int64_t kNow = 1'700'000'000'000;  // A realistic clock: 13 digits.

// The work index as stored: (member, score) ascending.
std::vector<std::pair<std::string, std::string>> index_of(Raw& raw, const std::string& p) {
  const auto flat = raw.list({"ZRANGE", p + ":work", "0", "-1", "WITHSCORES"});
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t i = 0; i + 1 < flat.size(); i += 2) out.emplace_back(flat[i], flat[i + 1]);
  return out;
}

// Writes event `index` of session `s` as the original package's append does (a new session:
// split 0, metadata in chunks), unsettled and ready. It knows nothing of p:work.
void write_ts_event(Raw& raw, const std::string& p, const std::string& s, std::int64_t index,
                    const std::string& id) {
  const std::string i = std::to_string(index);
  raw.cmd({"XADD", p + ":" + s + ":log", i + "-0", "id", id, "type", "t", "payload", "{}",
           "created_at", std::to_string(kNow), "cause", "", "lane", ""});
  raw.cmd({"SET", p + ":" + s + ":count", i});
  raw.cmd({"SET", p + ":" + s + ":meta-split", "0"});
  raw.cmd({"ZADD", p + ":" + s + ":pending", i, i});
  raw.cmd({"ZADD", p + ":" + s + ":ready", i, i});
  raw.cmd({"SET", p + ":ids:\"" + id + "\"", "[\"" + s + "\"," + i + "]"});
}

std::vector<std::pair<std::string, std::int64_t>> sorted(const std::vector<SessionWork>& v) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (const auto& w : v) out.emplace_back(w.session_id, w.at_ms);
  std::sort(out.begin(), out.end());
  return out;
}

// A MONITOR connection: the commands every client and every script sends, one line each.
class Monitor {
 public:
  Monitor() {
    timeval tv{5, 0};
    context_ = redisConnectWithTimeout("127.0.0.1", a2::test::RedisServer::shared().port(), tv);
    REQUIRE((context_ && !context_->err));
    redisSetTimeout(context_, tv);
    RawReply ok(static_cast<redisReply*>(redisCommand(context_, "MONITOR")), freeReplyObject);
    REQUIRE(ok);
  }
  ~Monitor() { redisFree(context_); }
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  // The commands scripts sent (source "lua") since the last call, up to the ECHO `marker` that
  // `raw` sends now.
  std::vector<std::string> script_commands(Raw& raw) {
    const std::string marker = "monitor-mark-" + std::to_string(++marks_);
    raw.cmd({"ECHO", marker});
    std::vector<std::string> lines;
    for (;;) {
      void* r = nullptr;
      REQUIRE(redisGetReply(context_, &r) == REDIS_OK);
      RawReply reply(static_cast<redisReply*>(r), freeReplyObject);
      const std::string line(reply->str, reply->len);
      if (line.find("\"" + marker + "\"") != std::string::npos) return lines;
      if (line.find(" lua] ") != std::string::npos) lines.push_back(line);
    }
  }

 private:
  redisContext* context_ = nullptr;
  int marks_ = 0;
};

// The lines of `lines` that name the key `key`.
long long touching(const std::vector<std::string>& lines, const std::string& key) {
  return std::count_if(lines.begin(), lines.end(), [&](const std::string& line) {
    return line.find("\"" + key + "\"") != std::string::npos;
  });
}

TEST_CASE("each write changes the work index with at most one command inside its script",
          "[redis][discovery]") {
  const auto p = unique_prefix("wcost");
  auto f = open_fixture(p);
  f.clock->set(kNow);
  Raw raw;
  Monitor monitor;
  const std::string work = p + ":work";
  auto expect = [&](const char* what, long long index_commands, const char* first_word) {
    INFO(what);
    const auto lines = monitor.script_commands(raw);
    CHECK(touching(lines, work) == index_commands);
    if (index_commands == 1) {
      const auto it = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) {
        return l.find("\"" + work + "\"") != std::string::npos;
      });
      CHECK(it->find(first_word) != std::string::npos);
    }
  };
  (void)monitor.script_commands(raw);
  (void)f->append("s", evs(2));  // Fast path.
  expect("append", 1, "\"LT\"");
  NewEvent laned = ev();
  laned.lane = "L";
  (void)f->append("s", {laned, laned});  // General path.
  expect("append with lanes", 1, "\"LT\"");
  NewEvent settled = ev();
  settled.settled = true;
  (void)f->append("s", {settled});
  expect("settled append", 0, "");
  (void)f->append("s", {});
  expect("empty append", 0, "");
  auto c = f->claim_available({.session_id = "s",
                               .holder = "w1",
                               .ttl_ms = kTtl,
                               .expires_at_ms = std::nullopt,
                               .exclude_indexes = {},
                               .max_events = 1});
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  expect("claim stopped at max_events", 1, "\"LT\"");
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  expect("claim of the rest", 1, "\"ZADD\"");
  REQUIRE(claim(*f).verdict == ClaimVerdict::busy);
  expect("busy claim", 1, "\"ZADD\"");
  REQUIRE(f->claim_available({.session_id = "s",
                              .holder = "w1",
                              .ttl_ms = kTtl,
                              .expires_at_ms = std::nullopt,
                              .exclude_indexes = {1},
                              .max_events = std::nullopt})
              .verdict == ClaimVerdict::busy);
  expect("claim with exclusions", 0, "");
  (void)f->renew_claims({.session_id = "s",
                         .holder = "w1",
                         .claims = {{1, 1}},
                         .ttl_ms = kTtl,
                         .expires_at_ms = std::nullopt});
  // A renewal lowers the entry to the new lease end (docs/semantics.md#S214).
  expect("renewal", 1, "\"LT\"");
  REQUIRE(complete(*f, "s", 1, 1).verdict == CompleteVerdict::completed);
  expect("completion without children", 0, "");
  REQUIRE(complete(*f, "s", 2, 1, {child("c1")}).verdict == CompleteVerdict::completed);
  expect("completion with a child (fast path)", 1, "\"LT\"");
  REQUIRE(complete(*f, "s", 3, 1).verdict == CompleteVerdict::completed);  // Lane L to 4.
  expect("completion handing a lane on", 1, "\"LT\"");
  REQUIRE(
      f->release_claims({.session_id = "s", .holder = "w1", .claims = {{99, 1}}}).released.empty());
  expect("release of nothing", 0, "");
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);  // 4 and the child 6.
  expect("claim", 1, "\"ZADD\"");
  REQUIRE(
      f->release_claims({.session_id = "s", .holder = "w1", .claims = {{4, 1}}}).released.size() ==
      1);
  expect("release", 1, "\"LT\"");
  REQUIRE(fail(*f, "s", 6, 1).verdict == FailVerdict::failed);
  expect("failure", 1, "\"LT\"");
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  expect("claim again", 1, "\"ZADD\"");
  REQUIRE(fail(*f, "s", 6, 2, 1).verdict == FailVerdict::dead_lettered);
  expect("dead-lettering failure of an unlaned event", 0, "");
  REQUIRE(
      f->release_claims(
           {.session_id = "s", .holder = "w1", .claims = {{4, 2}}, .available_at_ms = kNow + 5000})
          .released.size() == 1);
  expect("release with a snooze", 1, "\"LT\"");
  REQUIRE(redrive(*f, "s", 6, RedriveAction::retry).redriven);
  expect("redrive", 1, "\"LT\"");
  f->put_snapshots("s", "r", {{.index = 1, .state = 1, .pin_event_indexes = {}}});
  expect("snapshot write", 0, "");
  (void)clear(*f);
  expect("clear", 1, "\"ZREM\"");
  REQUIRE(claim(*f).verdict == ClaimVerdict::settled);
  expect("settled claim", 1, "\"ZREM\"");
  (void)f->reclaim("s");
  expect("reclaim", 0, "");
}

TEST_CASE("data written by the original package is found by sweep_work, not by find_work",
          "[redis][discovery][legacy]") {
  const auto p = unique_prefix("wsweep");
  auto f = open_fixture(p);
  f.clock->set(kNow);
  Raw raw;
  // a: a ready event; b: a ready event held by a TypeScript worker (fractional lease end);
  // c: an event the original package completed (nothing ready); d: a reducer named "ready"
  // (p:d:snap:ready matches the sweep's pattern but is no session's ready set).
  write_ts_event(raw, p, "a", 1, "a1");
  write_ts_event(raw, p, "b", 1, "b1");
  raw.cmd({"HSET", p + ":b:meta:0", "1:d", "1", "1:ch", "ts", "1:ce", "1700000030000.5"});
  write_ts_event(raw, p, "c", 1, "c1");
  raw.cmd({"ZREM", p + ":c:ready", "1"});
  raw.cmd({"ZREM", p + ":c:pending", "1"});
  raw.cmd({"HSET", p + ":c:meta:0", "1:p", std::to_string(kNow)});
  raw.cmd({"SET", p + ":d:snap:ready", R"({"index":0,"state":1,"updatedAt":1})"});

  CHECK(f->find_work().sessions.empty());  // The original package keeps no index.
  const auto swept = f->sweep_work();
  CHECK(sorted(swept.indexed) ==
        std::vector<std::pair<std::string, std::int64_t>>{{"a", kNow}, {"b", kNow + 30000}});
  const auto page = f->find_work();
  REQUIRE(page.sessions.size() == 2);
  CHECK(page.sessions[0].session_id == "a");
  CHECK(page.sessions[0].at_ms == kNow);
  CHECK(page.sessions[1].session_id == "b");
  CHECK(page.sessions[1].at_ms == kNow + 30000);
  CHECK(f->sweep_work().indexed.empty());  // Nothing later than the work any more.

  // The lease ends: a claim takes it and sets the exact time, which the sweep leaves.
  f.clock->set(kNow + 30001);
  REQUIRE(claim(*f, "b").verdict == ClaimVerdict::claimed);
  CHECK(index_of(raw, p).back() ==
        std::pair<std::string, std::string>{"b", std::to_string(kNow + 30001 + kTtl)});
  CHECK(f->sweep_work().indexed.empty());
  // An entry that is too late (written by an older a2, or moved by the original's claim) is
  // moved earlier.
  raw.cmd({"ZADD", p + ":work", std::to_string(kNow + 99999), "a"});
  CHECK(sorted(f->sweep_work().indexed) ==
        std::vector<std::pair<std::string, std::int64_t>>{{"a", kNow + 30001}});
}

TEST_CASE("sweep_work pages through more keys than one SCAN step", "[redis][discovery]") {
  const auto p = unique_prefix("wscan");
  auto f = open_fixture(p);
  f.clock->set(kNow);
  Raw raw;
  const int sessions = 2500;  // More than kSweepScanCount keys of the prefix.
  for (int i = 0; i < sessions; ++i) {
    const std::string s = "s" + std::to_string(i);
    raw.cmd({"ZADD", p + ":" + s + ":ready", "1", "1"});
    raw.cmd({"SET", p + ":" + s + ":count", "1"});
  }
  CHECK(f->sweep_work().indexed.size() == static_cast<std::size_t>(sessions));
  CHECK(raw.integer({"ZCARD", p + ":work"}) == sessions);
  CHECK(f->sweep_work().indexed.empty());
}

TEST_CASE("a work watch reports the original package's work within its sweep interval",
          "[redis][discovery][legacy]") {
  const auto p = unique_prefix("wwatch");
  auto f = open_fixture(p);
  f.clock->set(kNow);
  Raw raw;
  auto watch = f->watch_work({.sweep_interval = 300ms});
  CHECK(watch->wait(50ms).session_ids.empty());
  const auto written = std::chrono::steady_clock::now();
  write_ts_event(raw, p, "legacy", 1, "l1");
  WorkSignal signal;
  while (signal.session_ids.empty() && std::chrono::steady_clock::now() < written + 3s)
    signal = watch->wait(1000ms);
  const auto took = std::chrono::steady_clock::now() - written;
  CHECK(signal.session_ids == std::vector<std::string>{"legacy"});
  CHECK(took < 300ms + 250ms);  // One sweep interval and a margin.
  auto page = f->find_work({.after = std::nullopt, .due_by_ms = kNow, .limit = 10});
  REQUIRE(page.sessions.size() == 1);
  CHECK(page.sessions[0].session_id == "legacy");
  // Found once: the next sweeps change nothing, so they report nothing.
  CHECK(watch->wait(700ms).session_ids.empty());
}

TEST_CASE("the work watch signals a2's writes through the notify channels", "[redis][discovery]") {
  const auto p = unique_prefix("wsig");
  auto f = open_fixture(p);
  f.clock->set(kNow);
  Raw raw;
  auto watch = f->watch_work({.sweep_interval = 0ms});
  // A settled append and a completion with only a settled child queue no work: their wake-ups
  // end with ,"w":0} and the watch does not report them.
  Raw sub;
  sub.subscribe(p + ":q:notify");
  NewEvent settled = ev();
  settled.settled = true;
  (void)f->append("q", {settled});
  const auto quiet = sub.next_message(2000ms);
  REQUIRE(quiet);
  CHECK(quiet->size() > 7);
  CHECK(quiet->substr(quiet->size() - 7) == ",\"w\":0}");
  CHECK(watch->wait(200ms).session_ids.empty());
  // Appends and failures signal.
  (void)f->append("a", evs(1));
  REQUIRE(claim(*f, "a").verdict == ClaimVerdict::claimed);
  (void)f->append("b", evs(1));
  auto got = watch->wait(2000ms);
  while (got.session_ids.size() < 2) {
    auto more = watch->wait(2000ms);
    REQUIRE(!more.session_ids.empty());
    got.session_ids.insert(got.session_ids.end(), more.session_ids.begin(), more.session_ids.end());
  }
  CHECK(got.session_ids == std::vector<std::string>{"a", "b"});
  CHECK_FALSE(got.resync);
  REQUIRE(fail(*f, "a", 1, 1).verdict == FailVerdict::failed);
  CHECK(watch->wait(2000ms).session_ids == std::vector<std::string>{"a"});

  // A lost connection: the watch subscribes again and reports resync.
  const auto clients = raw.get({"CLIENT", "LIST", "TYPE", "pubsub"}).value_or("");
  std::istringstream lines(clients);
  std::string line;
  int killed = 0;
  while (std::getline(lines, line)) {
    if (line.find("cmd=psubscribe") == std::string::npos) continue;
    const auto id = line.substr(3, line.find(' ') - 3);
    killed += static_cast<int>(raw.integer({"CLIENT", "KILL", "ID", id}));
  }
  REQUIRE(killed >= 1);
  WorkSignal after;
  const auto start = std::chrono::steady_clock::now();
  while (!after.resync && std::chrono::steady_clock::now() < start + 5s) after = watch->wait(500ms);
  CHECK(after.resync);
  (void)f->append("c", evs(1));
  CHECK(watch->wait(2000ms).session_ids == std::vector<std::string>{"c"});

  // cancel() wakes a waiting wait early.
  std::thread canceller([&] {
    std::this_thread::sleep_for(100ms);
    watch->cancel();
  });
  const auto waited = std::chrono::steady_clock::now();
  CHECK(watch->wait(5000ms).session_ids.empty());
  canceller.join();
  CHECK(std::chrono::steady_clock::now() - waited < 2000ms);
  CHECK(watch->cancelled());
}

TEST_CASE("failures, releases and redrives publish the frontier alone, which feeds ignore",
          "[redis][discovery][wake]") {
  const auto p = unique_prefix("wfront");
  auto f = open_fixture(p);
  f.clock->set(kNow);
  (void)f->append("s", evs(3));
  auto feed = f->subscribe("s", 3);
  Raw sub;
  sub.subscribe(p + ":s:notify");
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  REQUIRE(fail(*f, "s", 1, 1).verdict == FailVerdict::failed);
  CHECK(sub.next_message(2000ms) == std::optional<std::string>("{\"f\":3}"));
  REQUIRE(
      f->release_claims({.session_id = "s", .holder = "w1", .claims = {{2, 1}}}).released.size() ==
      1);
  CHECK(sub.next_message(2000ms) == std::optional<std::string>("{\"f\":3}"));
  CHECK(feed->next(200ms).empty());  // At the head: nothing to deliver.
  CHECK(feed->cursor() == 3);
}

TEST_CASE("find_work's cost does not depend on idle sessions", "[redis][discovery]") {
  const auto p = unique_prefix("wcostfind");
  auto f = open_fixture(p);
  f.clock->set(kNow);
  Raw raw;
  for (int i = 0; i < 100; ++i) (void)f->append("w" + std::to_string(i), evs(1));
  auto measure = [&] {
    REQUIRE(raw.get({"CONFIG", "RESETSTAT"}) == "OK");
    auto first = f->find_work({.after = std::nullopt, .due_by_ms = kNow, .limit = 50});
    REQUIRE(first.next);
    auto second = f->find_work({.after = first.next, .due_by_ms = kNow, .limit = 50});
    CHECK(second.sessions.size() == 50);
    std::map<std::string, long long> calls;
    for (const char* c : {"zrange", "zscore", "zrank", "zcount", "evalsha"})
      calls[c] = calls_of(raw, c);
    return calls;
  };
  const auto before = measure();
  // Idle sessions: settled events only, and sessions whose work was completed and whose entry a
  // settled claim removed.
  NewEvent settled = ev();
  settled.settled = true;
  for (int i = 0; i < 300; ++i) (void)f->append("idle" + std::to_string(i), {settled});
  for (int i = 0; i < 100; ++i) {
    const std::string s = "done" + std::to_string(i);
    (void)f->append(s, evs(1));
    REQUIRE(claim(*f, s).verdict == ClaimVerdict::claimed);
    REQUIRE(complete(*f, s, 1, 1).verdict == CompleteVerdict::completed);
    REQUIRE(claim(*f, s).verdict == ClaimVerdict::settled);
  }
  CHECK(raw.integer({"ZCARD", p + ":work"}) == 100);
  const auto after = measure();
  CHECK(before == after);
  CHECK(after.at("evalsha") == 2);
  CHECK(after.at("zrange") == 2);  // One per page.
}

TEST_CASE("find_work pages exactly through ties and a cursor that left the index",
          "[redis][discovery]") {
  const auto p = unique_prefix("wpage");
  auto f = open_fixture(p);
  Raw raw;
  // Bytewise order of one score: "A" < "Z" < "_" < "a" < "b" (a collation locale would differ).
  for (const char* s : {"b", "_", "a", "Z", "A"}) raw.cmd({"ZADD", p + ":work", "1000", s});
  raw.cmd({"ZADD", p + ":work", "2000", "c"});
  auto ids = [](const WorkPage& page) {
    std::vector<std::string> out;
    for (const auto& w : page.sessions) out.push_back(w.session_id);
    return out;
  };
  const auto all = f->find_work();
  CHECK(ids(all) == std::vector<std::string>{"A", "Z", "_", "a", "b", "c"});
  CHECK_FALSE(all.next);
  // A cursor that is an entry.
  auto page = f->find_work({.after = WorkCursor{1000, "Z"}, .due_by_ms = std::nullopt, .limit = 2});
  CHECK(ids(page) == std::vector<std::string>{"_", "a"});
  REQUIRE(page.next);
  CHECK(page.next->session_id == "a");
  CHECK(page.next->at_ms == 1000);
  // A cursor whose session is not in the index at that score (moved or removed since).
  raw.cmd({"ZADD", p + ":work", "5000", "Z"});
  page = f->find_work({.after = WorkCursor{1000, "Z"}, .due_by_ms = std::nullopt, .limit = 10});
  CHECK(ids(page) == std::vector<std::string>{"_", "a", "b", "c", "Z"});
  page = f->find_work({.after = WorkCursor{1000, "B"}, .due_by_ms = 1000, .limit = 10});
  CHECK(ids(page) == std::vector<std::string>{"_", "a", "b"});
  page = f->find_work({.after = WorkCursor{999, "zz"}, .due_by_ms = std::nullopt, .limit = 1});
  CHECK(ids(page) == std::vector<std::string>{"A"});
  page = f->find_work({.after = WorkCursor{1000, "b"}, .due_by_ms = 1999, .limit = 10});
  CHECK(ids(page).empty());
  CHECK_FALSE(page.next);
}

}  // namespace
}  // namespace a2::redis_test
