// SPDX-License-Identifier: MIT
// a2ctl (tools/a2ctl, docs/operating.md) run as a subprocess against a spawned Redis and a
// spawned Postgres: golden tables, parsed --json, exit codes, confirmation, export/import, data in
// the original package's layout, odd session ids, a dead letter among many sessions. Every case
// runs on both backends with the same expectations. The data is seeded with the C++ API on a
// manual clock (and raw writes for the original layout); a2ctl runs with --now, so the output is
// deterministic. A2CTL_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing.
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "a2/postgres.hpp"
#include "a2/redis.hpp"
#include "servers/postgres_server.hpp"
#include "servers/process.hpp"
#include "servers/redis_server.hpp"

extern char** environ;

namespace {

using a2::Json;
using a2::test::PostgresServer;
using a2::test::RedisServer;

constexpr std::int64_t kT0 = 1'700'000'000'000;  // 2023-11-14T22:13:20.000Z
const std::string kNow = std::to_string(kT0 + 5000);

enum class Backend { redis, postgres };

// One isolated store on a shared server: its own key prefix or schema.
struct Target {
  Backend backend = Backend::redis;
  std::string url;
  std::string space;  // Key prefix or schema.
  std::shared_ptr<a2::ManualClock> clock = std::make_shared<a2::ManualClock>(kT0);

  std::unique_ptr<a2::Store> open() const {
    if (backend == Backend::redis)
      return a2::redis::open({.url = url,
                              .key_prefix = space,
                              .clock = clock,
                              .ids = std::make_shared<a2::SequentialIdSource>("g")});
    return a2::postgres::open({.connection = url,
                               .schema = space,
                               .clock = clock,
                               .ids = std::make_shared<a2::SequentialIdSource>("g")});
  }
  // The global options that select this store.
  std::vector<std::string> store_args() const {
    return {"--store", url, backend == Backend::redis ? "--prefix" : "--schema", space};
  }
};

Target target(Backend b, const std::string& name) {
  static std::atomic<int> n{0};
  Target t;
  t.backend = b;
  t.url = b == Backend::redis ? RedisServer::shared().url() : PostgresServer::shared().connection();
  t.space = "ctl_" + name + std::to_string(++n);
  return t;
}

std::string name_of(Backend b) { return b == Backend::redis ? "redis" : "postgres"; }
const Backend kBackends[] = {Backend::redis, Backend::postgres};
// A session id with every odd character a session id may hold.
const std::string kOdd = "odd:a@b+c=d/e~f.g-h_i:9";
// A unicode session id: not a valid session id (a2::InvalidArgument, exit 2).
const std::string kUni =
    "\xC3\xBCn\xC3\xAF"
    "code-\xE3\x82\xBB\xE3\x83\x83";

struct Run {
  int code = -1;
  std::string out, err;
};

// The directory of a2ctl's stdin, stdout and stderr files, removed when the test program exits.
struct ScratchDir {
  std::string path = a2::test::make_temp_dir("a2ctl-test-");
  ~ScratchDir() { a2::test::remove_tree(path); }
};

// Runs a2ctl with `args`, stdin from `input` (a file, not a terminal), and waits for it.
Run a2ctl(const std::vector<std::string>& args, const std::string& input = "") {
  static std::atomic<int> n{0};
  static const ScratchDir dir;
  const std::string base = dir.path + "/" + std::to_string(++n);
  { std::ofstream(base + ".in", std::ios::binary) << input; }
  std::vector<std::string> argv{A2CTL_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> p;
  for (auto& a : argv) p.push_back(a.data());
  p.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, (base + ".in").c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, (base + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_addopen(&fa, 2, (base + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0].c_str(), &fa, nullptr, p.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE(rc == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  Run r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = a2::test::read_file(base + ".out");
  r.err = a2::test::read_file(base + ".err");
  for (const char* ext : {".in", ".out", ".err"}) std::remove((base + ext).c_str());
  return r;
}

// a2ctl against `t` with --now (deterministic relative times and lease judgements).
Run ctl(const Target& t, const std::vector<std::string>& args, const std::string& input = "") {
  std::vector<std::string> all = t.store_args();
  all.insert(all.end(), {"--now", kNow});
  all.insert(all.end(), args.begin(), args.end());
  return a2ctl(all, input);
}

Json json_of(const Run& r) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.code == 0);
  return Json::parse(r.out);
}

// Compares with golden/<name>.txt (or writes it with A2CTL_UPDATE_GOLDEN=1).
void check_golden(const std::string& name, const Run& r) {
  INFO("golden " << name << "\nstderr: " << r.err);
  REQUIRE(r.code == 0);
  const std::string path = std::string(A2CTL_GOLDEN_DIR) + "/" + name + ".txt";
  if (std::getenv("A2CTL_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << r.out;
    return;
  }
  CHECK(r.out == a2::test::read_file(path));
}

a2::NewEvent ev(std::string id, std::string type, Json payload,
                std::optional<std::string> lane = std::nullopt, bool settled = false) {
  a2::NewEvent e;
  e.id = std::move(id);
  e.type = std::move(type);
  e.payload = std::move(payload);
  e.lane = std::move(lane);
  e.settled = settled;
  return e;
}

// Two events of session `s` as the original package writes them (raw; no a2 extension fields).
void write_legacy(const Target& t, const std::string& s) {
  if (t.backend == Backend::redis) {
    redisContext* c = redisConnect("127.0.0.1", RedisServer::shared().port());
    REQUIRE((c && !c->err));
    auto cmd = [&](std::vector<std::string> argv) {
      std::vector<const char*> p;
      std::vector<std::size_t> l;
      for (const auto& a : argv) {
        p.push_back(a.data());
        l.push_back(a.size());
      }
      auto* r = static_cast<redisReply*>(
          redisCommandArgv(c, static_cast<int>(argv.size()), p.data(), l.data()));
      REQUIRE(r);
      REQUIRE(r->type != REDIS_REPLY_ERROR);
      freeReplyObject(r);
    };
    const std::string k = t.space + ":" + s;
    for (int i = 1; i <= 2; ++i) {
      const std::string n = std::to_string(i), id = "legacy-" + n;
      cmd({"XADD", k + ":log", n + "-0", "id", id, "type", "legacy.job", "payload",
           "{\"n\":" + n + "}", "created_at", std::to_string(kT0), "cause", "", "lane", ""});
      cmd({"SET", k + ":count", n});
      cmd({"SET", k + ":meta-split", "0"});
      cmd({"ZADD", k + ":pending", n, n});
      cmd({"ZADD", k + ":ready", n, n});
      cmd({"SET", t.space + ":ids:\"" + id + "\"", "[\"" + s + "\"," + n + "]"});
    }
    redisFree(c);
    return;
  }
  (void)t.open();  // Creates the schema.
  pqxx::connection conn(t.url);
  pqxx::nontransaction tx(conn);
  tx.exec("set search_path to \"" + t.space + "\"");
  for (int i = 1; i <= 2; ++i) {
    const std::string n = std::to_string(i);
    tx.exec(
        "insert into a2_events (session_id, idx, event_type, payload, event_id, created_at, "
        "cause, lane, lane_ready, processed_at) values (" +
        tx.quote(s) + ", " + n + ", 'legacy.job', '{\"n\": " + n + "}', 'legacy-" + n + "', " +
        std::to_string(kT0) + ", null, null, true, null)");
  }
}

// The fleet the golden tables show: a session with `:` and lanes and a live claim, one with a
// dead letter and a completion, a unicode id with a checkpoint, a cleared one, and one written
// in the original package's layout.
void seed_fleet(const Target& t) {
  auto store = t.open();
  (void)store->append("orders:1", {ev("o1", "order.placed", Json{{"sku", "A1"}}, "l1"),
                                   ev("o2", "order.paid", Json{{"amount", 12.5}}, "l1"),
                                   ev("o3", "note", "checked", std::nullopt, true)});
  auto c = store->claim_available({.session_id = "orders:1",
                                   .holder = "w1",
                                   .ttl_ms = 30000,
                                   .expires_at_ms = std::nullopt,
                                   .exclude_indexes = {},
                                   .max_events = std::nullopt});
  REQUIRE(c.events.size() == 1);

  (void)store->append("jobs",
                      {ev("j1", "job.run", Json{{"n", 1}}), ev("j2", "job.run", Json{{"n", 2}})});
  c = store->claim_available({.session_id = "jobs",
                              .holder = "w2",
                              .ttl_ms = 30000,
                              .expires_at_ms = std::nullopt,
                              .exclude_indexes = {},
                              .max_events = std::nullopt});
  REQUIRE(c.events.size() == 2);
  t.clock->advance(1000);
  auto f = store->fail_attempt({.session_id = "jobs",
                                .index = 1,
                                .attempt = 1,
                                .error = "boom: timeout\nat step 2",
                                .max_failures = 1,
                                .retry_at_ms = std::nullopt});
  REQUIRE(f.verdict == a2::FailVerdict::dead_lettered);
  auto done = store->complete_attempt(
      {.session_id = "jobs", .index = 2, .attempt = 1, .events = {}, .claim_next = std::nullopt});
  REQUIRE(done.verdict == a2::CompleteVerdict::completed);

  // Session ids are ASCII (letters, digits, ':' and -_.~@+=/); ids, types and payloads are not.
  (void)store->append(kOdd, {ev("\xC3\xBC-\xE3\x82\xBB", "gr\xC3\xBC\xC3\x9F\xE3\x82\xBB",
                                Json{{"text", "gr\xC3\xBC\xC3\x9F \xE3\x82\xBB\xE3\x83\x83"}})});
  store->put_snapshots(kOdd, "counter",
                       {{.index = 1, .state = Json{{"count", 1}}, .pin_event_indexes = {}}});

  (void)store->append("cleared", {ev("c1", "t", 1), ev("c2", "t", 2)});
  REQUIRE(
      store->clear({.session_id = "cleared", .if_last_index = 2, .cause = std::nullopt}).cleared);
  write_legacy(t, "legacy");
}

TEST_CASE("a2ctl tables match the golden files on both backends", "[a2ctl]") {
  for (Backend b : kBackends) {
    DYNAMIC_SECTION(name_of(b)) {
      const Target t = target(b, "golden");
      seed_fleet(t);
      check_golden("sessions", ctl(t, {"sessions"}));
      check_golden("show_orders", ctl(t, {"show", "orders:1"}));
      check_golden("show_odd", ctl(t, {"show", kOdd}));
      check_golden("events_odd", ctl(t, {"events", kOdd}));
      check_golden("events_orders", ctl(t, {"events", "orders:1"}));
      check_golden("events_legacy", ctl(t, {"events", "legacy"}));
      check_golden("event_jobs_1", ctl(t, {"event", "jobs", "1"}));
      check_golden("dead_letters", ctl(t, {"dead-letters"}));
      check_golden("sessions_with_dead", ctl(t, {"sessions", "--with-dead"}));
    }
  }
}

TEST_CASE("a2ctl --json output parses with the documented fields", "[a2ctl]") {
  for (Backend b : kBackends) {
    DYNAMIC_SECTION(name_of(b)) {
      const Target t = target(b, "json");
      seed_fleet(t);
      auto sessions = json_of(ctl(t, {"sessions", "--json"}));
      REQUIRE(sessions["sessions"].size() == 5);
      CHECK(sessions["total"] == 5);
      CHECK(sessions["truncated"] == false);
      std::vector<std::string> ids;
      for (const auto& s : sessions["sessions"]) ids.push_back(s["session_id"]);
      CHECK(ids == std::vector<std::string>{"cleared", "jobs", "legacy", kOdd, "orders:1"});
      const auto& legacy = sessions["sessions"][2];
      CHECK(legacy["head"] == 2);
      CHECK(legacy["pending"] == 2);
      CHECK(legacy["ready"] == 2);
      const auto& cleared = sessions["sessions"][0];
      CHECK(cleared["head"] == 3);
      CHECK(cleared["clear_index"] == 3);
      CHECK(cleared["pending"] == 0);
      auto limited = json_of(ctl(t, {"sessions", "--limit", "2", "--json"}));
      CHECK(limited["sessions"].size() == 2);
      CHECK(limited["truncated"] == true);

      auto show = json_of(ctl(t, {"show", "orders:1", "--json"}));
      CHECK(show["session"]["head"] == 3);
      CHECK(show["session"]["pending"] == 2);
      CHECK(show["session"]["claimed"] == 1);
      CHECK(show["session"]["ready"] == 0);
      REQUIRE(show["lanes"].size() == 1);
      CHECK(show["lanes"][0]["lane"] == "l1");
      CHECK(show["lanes"][0]["head_index"] == 1);
      CHECK(show["lanes"][0]["pending"] == 2);
      REQUIRE(show["claims"].size() == 1);
      CHECK(show["claims"][0]["holder"] == "w1");
      CHECK(show["claims"][0]["expires_at"] == kT0 + 30000);
      auto uni = json_of(ctl(t, {"show", kOdd, "--json"}));
      REQUIRE(uni["snapshots"].size() == 1);
      CHECK(uni["snapshots"][0]["reducer"] == "counter");

      auto dead = json_of(ctl(t, {"dead-letters", "--json"}));
      REQUIRE(dead["dead_letters"].size() == 1);
      CHECK(dead["dead_letters"][0]["session_id"] == "jobs");
      CHECK(dead["dead_letters"][0]["index"] == 1);
      CHECK(dead["dead_letters"][0]["last_error"] == "boom: timeout\nat step 2");
      CHECK(dead["dead_letters"][0]["failure_count"] == 1);
      CHECK(dead["dead_letters"][0]["failed_at"] == kT0 + 1000);

      auto events = json_of(ctl(t, {"events", "jobs", "--json"}));
      REQUIRE(events["events"].size() == 2);
      CHECK(events["events"][1]["processed_by_attempt"] == 1);
      CHECK(events["events"][1]["returned_event_ids"] == Json::array());
      auto one = json_of(ctl(t, {"event", "orders:1", "2", "--json"}));
      CHECK(one["payload"] == Json{{"amount", 12.5}});
      CHECK(one["lane"] == "l1");

      auto stats = json_of(ctl(t, {"stats", "--window", "0", "--json"}));
      CHECK(stats["totals"]["sessions"] == 5);
      CHECK(stats["totals"]["events"] == 3 + 2 + 1 + 3 + 2);
      CHECK(stats["totals"]["dead"] == 1);

      // tail: the feed from the start, two events, one JSON line each.
      auto tail = ctl(t, {"tail", "orders:1", "--after", "0", "--count", "2", "--json"});
      REQUIRE(tail.code == 0);
      auto nl = tail.out.find('\n');
      REQUIRE(nl != std::string::npos);
      CHECK(Json::parse(tail.out.substr(0, nl))["id"] == "o1");
      CHECK(Json::parse(tail.out.substr(nl + 1))["id"] == "o2");
    }
  }
}

TEST_CASE("a2ctl exit codes: 0 ok, 1 refused, 2 usage, 3 unavailable", "[a2ctl]") {
  const int dead_port = a2::test::free_port();
  for (Backend b : kBackends) {
    DYNAMIC_SECTION(name_of(b)) {
      const Target t = target(b, "codes");
      seed_fleet(t);
      auto store = t.open();
      // 1: the store's verdicts.
      auto r = ctl(t, {"redrive", "jobs", "2", "--retry", "--yes"});
      CHECK(r.code == 1);
      CHECK(r.err.rfind("a2ctl redrive: ", 0) == 0);
      CHECK(ctl(t, {"event", "jobs", "9"}).code == 1);
      CHECK(ctl(t, {"append", "jobs", "--type", "t", "--id", "o1"}).code ==
            1);  // Another session's id.
      CHECK(ctl(t, {"clear", "jobs", "--if-last", "1", "--yes"}).code == 1);
      CHECK(store->head("jobs").clear_index == 0);
      // 2: usage.
      r = ctl(t, {"append", "jobs", "--type", "t", "--payload", "{nope"});
      CHECK(r.code == 2);
      CHECK(r.err.rfind("a2ctl append: ", 0) == 0);
      CHECK(ctl(t, {"events", "jobs", "--bogus"}).code == 2);
      CHECK(ctl(t, {"redrive", "jobs", "1"}).code == 2);           // Neither --retry nor --skip.
      CHECK(ctl(t, {"events", std::string(300, 's')}).code == 2);  // InvalidArgument.
      r = ctl(t, {"show", kUni});
      CHECK(r.code == 2);
      CHECK(r.err.rfind("a2ctl show: ", 0) == 0);
      CHECK(a2ctl({"--store", "ftp://x", "sessions"}).code == 2);
      CHECK(store->head("jobs").head_index == 2);
      // Confirmation: stdin is not a terminal and no --yes: refused, nothing changed.
      r = ctl(t, {"clear", "jobs"});
      CHECK(r.code == 2);
      CHECK(r.err.find("--yes") != std::string::npos);
      r = ctl(t, {"redrive", "jobs", "1", "--retry"});
      CHECK(r.code == 2);
      CHECK(store->dead_letters("jobs").size() == 1);
      CHECK(store->head("jobs").clear_index == 0);
      // 3: nobody listens on the port.
      const std::string url = b == Backend::redis
                                  ? "redis://127.0.0.1:" + std::to_string(dead_port)
                                  : "host=127.0.0.1 port=" + std::to_string(dead_port) +
                                        " dbname=postgres connect_timeout=2";
      r = a2ctl({"--store", url, "sessions"});
      CHECK(r.code == 3);
      CHECK(r.err.rfind("a2ctl sessions: ", 0) == 0);
    }
  }
}

TEST_CASE("a2ctl --help of every command explains it with examples", "[a2ctl]") {
  for (const char* cmd : {"sessions", "show", "events", "event", "tail", "dead-letters", "redrive",
                          "append", "clear", "reclaim", "export", "import", "stats"}) {
    auto r = a2ctl({cmd, "--help"});
    INFO(cmd);
    CHECK(r.code == 0);
    CHECK(r.out.find("Examples:") != std::string::npos);
  }
  auto r = a2ctl({"--help"});
  CHECK(r.code == 0);
  CHECK(r.out.find("Exit codes") != std::string::npos);
  CHECK(a2ctl({}).code == 2);  // No command.
}

TEST_CASE("a2ctl finds a dead letter among many sessions and redrives it", "[a2ctl]") {
  for (Backend b : kBackends) {
    DYNAMIC_SECTION(name_of(b)) {
      const Target t = target(b, "many");
      auto store = t.open();
      for (int i = 0; i < 300; ++i)
        (void)store->append("s" + std::to_string(i), {ev("m" + std::to_string(i), "t", i)});
      auto c = store->claim_available({.session_id = "s123",
                                       .holder = "w",
                                       .ttl_ms = 1000,
                                       .expires_at_ms = std::nullopt,
                                       .exclude_indexes = {},
                                       .max_events = std::nullopt});
      REQUIRE(c.events.size() == 1);
      REQUIRE(store
                  ->fail_attempt({.session_id = "s123",
                                  .index = 1,
                                  .attempt = 1,
                                  .error = "stuck",
                                  .max_failures = 1,
                                  .retry_at_ms = std::nullopt})
                  .verdict == a2::FailVerdict::dead_lettered);
      auto dead = json_of(ctl(t, {"dead-letters", "--json"}));
      REQUIRE(dead["dead_letters"].size() == 1);
      CHECK(dead["dead_letters"][0]["session_id"] == "s123");
      CHECK(dead["dead_letters"][0]["last_error"] == "stuck");
      CHECK(json_of(ctl(t, {"sessions", "--with-dead", "--json"}))["total"] == 1);
      CHECK(ctl(t, {"redrive", "--all-dead", "--retry"}).code == 2);  // Not confirmed.
      auto r = json_of(ctl(t, {"redrive", "--all-dead", "--retry", "--yes", "--json"}));
      REQUIRE(r["results"].size() == 1);
      CHECK(r["results"][0]["redriven"] == true);
      CHECK(store->dead_letters("s123").empty());
      c = store->claim_available({.session_id = "s123",
                                  .holder = "w",
                                  .ttl_ms = 1000,
                                  .expires_at_ms = std::nullopt,
                                  .exclude_indexes = {},
                                  .max_events = std::nullopt});
      CHECK(c.verdict == a2::ClaimVerdict::claimed);
      CHECK(ctl(t, {"redrive", "--all-dead", "--skip", "--yes"}).out == "no dead letters\n");
    }
  }
}

TEST_CASE("a2ctl export and import round trip, re-import changes nothing", "[a2ctl]") {
  for (Backend b : kBackends) {
    DYNAMIC_SECTION(name_of(b)) {
      const Target t = target(b, "transfer");
      seed_fleet(t);
      auto store = t.open();
      auto exported = ctl(t, {"export", "jobs"});
      REQUIRE(exported.code == 0);
      // Into another session of the same store: ids are unique in a store, so prefixed.
      auto r = ctl(t, {"import", "jobs:copy", "--id-prefix", "copy-"}, exported.out);
      REQUIRE(r.code == 0);
      CHECK(r.out == "imported 2 events into jobs:copy (0 already present)\n");
      auto source = store->read("jobs");
      auto copy = store->read("jobs:copy");
      REQUIRE(copy.size() == source.size());
      for (std::size_t i = 0; i < copy.size(); ++i) {
        CHECK(copy[i].id == "copy-" + source[i].id);
        CHECK(copy[i].type == source[i].type);
        CHECK(copy[i].payload == source[i].payload);
      }
      CHECK_FALSE(copy[0].processed_at);  // A dead letter comes back as work.
      CHECK(copy[1].processed_at);        // A completed event as a fact.
      r = ctl(t, {"import", "jobs:copy", "--id-prefix", "copy-"}, exported.out);
      REQUIRE(r.code == 0);
      CHECK(r.out == "nothing changed: all 2 events are already in jobs:copy\n");
      CHECK(store->head("jobs:copy").head_index == 2);
      // A half-imported file resumes: the present ids are skipped, the rest appended.
      auto more = ctl(t, {"export", "orders:1"});
      r = ctl(t, {"import", "jobs:copy", "--id-prefix", "copy-", "--json"},
              exported.out + more.out);
      CHECK(json_of(r) == Json{{"imported", 3}, {"already_present", 2}});
      // Without a prefix the ids belong to the source session: refused, nothing changed.
      CHECK(ctl(t, {"import", "other"}, exported.out).code == 1);
      CHECK(store->head("other").head_index == 0);
      // Into another store (another prefix / schema) the ids stay.
      const Target t2 = target(b, "transfer_to");
      auto r2 = ctl(t2, {"import", "jobs"}, exported.out);
      CHECK(r2.code == 0);
      CHECK(t2.open()->read("jobs")[0].id == "j1");
      // Bad input: usage, nothing changed.
      CHECK(ctl(t2, {"import", "x"}, "{\"type\":\"t\"}\n").code == 2);
      CHECK(ctl(t2, {"import", "x"}, "not json\n").code == 2);
      CHECK(t2.open()->head("x").head_index == 0);
    }
  }
}

TEST_CASE("a2ctl append, clear and reclaim", "[a2ctl]") {
  for (Backend b : kBackends) {
    DYNAMIC_SECTION(name_of(b)) {
      const Target t = target(b, "write");
      auto r = ctl(t, {"append", "w:1", "--type", "t", "--payload", "{\"a\":1}", "--id", "x1",
                       "--lane", "L"});
      REQUIRE(r.code == 0);
      CHECK(r.out == "appended w:1 #1 id x1\n");
      r = ctl(t, {"append", "w:1", "--type", "t", "--payload", "{\"a\":1}", "--id", "x1", "--lane",
                  "L"});
      CHECK(r.out == "already present, nothing written: w:1 #1 id x1\n");
      r = ctl(t, {"append", "w:1", "--type", "fact", "--id", "x2", "--settled", "--json"});
      auto j = json_of(r);
      CHECK(j["appended"] == true);
      CHECK(j["events"][0]["index"] == 2);
      CHECK(j["events"][0]["processed_at"].is_number());
      r = ctl(t, {"clear", "w:1", "--yes"});
      REQUIRE(r.code == 0);
      CHECK(r.out.rfind("cleared w:1: marker at 3", 0) == 0);
      auto store = t.open();
      CHECK(store->head("w:1").clear_index == 3);
      r = ctl(t, {"reclaim", "w:1"});
      REQUIRE(r.code == 0);
      CHECK(r.out == "reclaimed 2 events of w:1\n");
      CHECK(r.err.find("2 events deleted") != std::string::npos);
      CHECK(json_of(ctl(t, {"reclaim", "w:1", "--json"}))["deleted"] == 0);
    }
  }
}

}  // namespace
