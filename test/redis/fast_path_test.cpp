// SPDX-License-Identifier: MIT
// The Lua fast paths (append, append_one, claim_available, complete_attempt: `local FAST_PATH =
// true`) are equal to the general paths: every call below runs on two databases of the shared
// server, with the production script (EVALSHA) on one and a copy whose FAST_PATH line is false
// (EVAL) on the other, from the same state and with the same arguments; the replies, every stored
// key (DUMP) and the wake-ups each published must be equal after each call. The calls cover the
// fast paths (append's one-event batches and append_one too) and each hand-off to the general
// path (owned ids, replays, ids a clear freed, several metadata hashes, over 100 events, causes,
// lanes, exclusions, settled events, scheduled events and children), bounded claims (max_events)
// and claims that meet delayed events (av). append_one.lua also runs against append.lua on the
// same event.

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "redis/scripts/append.hpp"
#include "redis/scripts/claim_available.hpp"
#include "redis/scripts/clear.hpp"
#include "redis/scripts/complete_attempt.hpp"
#include "redis/scripts/fail_attempt.hpp"
#include "support.hpp"

namespace {

namespace scripts = a2::redis::detail::scripts;
using a2::redis::detail::Argv;
using a2::redis::detail::Connection;
using a2::redis::detail::Endpoint;
using a2::redis::detail::Keys;
using a2::redis::detail::Reply;

constexpr int kProductionDb = 11;
constexpr int kGeneralDb = 12;

std::unique_ptr<Connection> connect(int db) {
  Endpoint e;
  e.host = "127.0.0.1";
  e.port = a2::test::RedisServer::shared().port();
  e.db = db;
  auto c = std::make_unique<Connection>(e, std::chrono::milliseconds(5000),
                                        std::chrono::milliseconds(10000));
  return c;
}

std::string render(const Reply& r) {
  switch (r.type) {
    case Reply::Type::nil:
      return "nil";
    case Reply::Type::integer:
      return "i" + std::to_string(r.integer);
    case Reply::Type::error:
      return "error:" + r.str;
    case Reply::Type::array: {
      std::string out = "[";
      for (const auto& e : r.elements) out += render(e) + ",";
      return out + "]";
    }
    default:
      return "'" + r.str + "'";
  }
}

// The script with its fast path switched off.
std::string general_only(const a2::detail::EmbeddedText& script) {
  const std::string on = "\nlocal FAST_PATH = true\n";
  std::string text(script.text);
  const auto at = text.find(on);
  REQUIRE(at != std::string::npos);
  REQUIRE(text.find(on, at + 1) == std::string::npos);
  text.replace(at, on.size(), "\nlocal FAST_PATH = false\n");
  return text;
}

class Twins {
 public:
  Twins()
      : production_(connect(kProductionDb)),
        general_(connect(kGeneralDb)),
        subscriber_(connect(kProductionDb)) {
    production_->command("test", {"FLUSHDB"});
    general_->command("test", {"FLUSHDB"});
    // Channels are not per database: this connection hears both twins' wake-ups, in the
    // order they ran, and the end marker each comparison publishes after them.
    subscriber_->send("test", {"PSUBSCRIBE", "fp:*"});
    auto confirmed = subscriber_->receive("test", std::chrono::milliseconds(5000));
    REQUIRE(confirmed);
    REQUIRE(confirmed->is_array());
  }

  // Runs a script with a fast path both ways; checks replies and stored keys are equal.
  template <class Script>
  Reply both_ways(const Script& args) {
    const scripts::Call call = args.encode(keys_);
    Reply fast = scripts::run_script(*production_, "test", Script::script(), call);
    Argv eval{"EVAL", general_only(Script::script()), std::to_string(call.keys.size())};
    for (auto& key : call.keys.values()) eval.push_back(std::move(key));
    for (auto& arg : call.argv.values()) eval.push_back(std::move(arg));
    Reply general = general_->command("test", eval);
    INFO("script " << Script::script().name);
    CHECK(render(fast) == render(general));
    check_same_keys();
    check_same_messages();
    ++compared_;
    return fast;
  }

  // Runs script `a` on the production twin and `b` on the general one, both by EVALSHA, from the
  // same state: two scripts that must answer and write alike (append_one.lua and append.lua).
  template <class A, class B>
  Reply across(const A& a, const B& b) {
    Reply ra = scripts::run_script(*production_, "test", A::script(), a.encode(keys_));
    Reply rb = scripts::run_script(*general_, "test", B::script(), b.encode(keys_));
    INFO("scripts " << A::script().name << " and " << B::script().name);
    CHECK(render(ra) == render(rb));
    check_same_keys();
    check_same_messages();
    ++compared_;
    return ra;
  }

  // Runs a script without a fast path the production way on both.
  template <class Script>
  Reply same_way(const Script& args) {
    const scripts::Call call = args.encode(keys_);
    Reply a = scripts::run_script(*production_, "test", Script::script(), call);
    Reply b = scripts::run_script(*general_, "test", Script::script(), call);
    REQUIRE(render(a) == render(b));
    return a;
  }

  void check_same_keys() {
    const auto a = dump(*production_);
    const auto b = dump(*general_);
    CHECK(a.size() == b.size());
    for (const auto& [key, value] : a) {
      INFO("key " << key);
      auto other = b.find(key);
      REQUIRE(other != b.end());
      CHECK(other->second == value);
    }
  }

  // The wake-ups published since the last comparison: the production twin's, then the same
  // ones from the general twin.
  void check_same_messages() {
    production_->command("test", {"PUBLISH", "fp:end-of-call", "end"});
    std::vector<std::string> messages;
    while (true) {
      auto m = subscriber_->receive("test", std::chrono::milliseconds(5000));
      REQUIRE(m);
      REQUIRE(m->is_array());
      REQUIRE(m->size() == 4);  // pmessage, pattern, channel, message.
      if ((*m)[2].str == "fp:end-of-call") break;
      messages.push_back((*m)[2].str + " " + (*m)[3].str);
    }
    REQUIRE(messages.size() % 2 == 0);
    const auto half = static_cast<std::ptrdiff_t>(messages.size() / 2);
    CHECK(std::vector<std::string>(messages.begin(), messages.begin() + half) ==
          std::vector<std::string>(messages.begin() + half, messages.end()));
    messages_ += messages.size() / 2;
  }

  // Runs a plain command on both twins (data the scripts did not write: a session of the
  // original package without the split key, a lost stream entry).
  void raw(const Argv& command) {
    production_->command("test", command);
    general_->command("test", command);
  }
  const Keys& keys() const { return keys_; }

  int compared() const { return compared_; }
  std::size_t messages() const { return messages_; }

 private:
  static std::map<std::string, std::string> dump(Connection& c) {
    std::map<std::string, std::string> out;
    Reply keys = c.command("test", {"KEYS", "*"});
    REQUIRE(keys.is_array());
    for (const auto& key : keys.elements) {
      Reply value = c.command("test", {"DUMP", key.str});
      out[key.str] = value.str;
    }
    return out;
  }

  Keys keys_{"fp"};
  std::unique_ptr<Connection> production_;
  std::unique_ptr<Connection> general_;
  std::unique_ptr<Connection> subscriber_;  // PSUBSCRIBEd to both twins' channels.
  int compared_ = 0;
  std::size_t messages_ = 0;  // Wake-ups compared.
};

a2::NewEvent work(const std::string& id, std::string type = "job") {
  a2::NewEvent e;
  e.id = id;
  e.type = std::move(type);
  e.payload = a2::Json::object({{"id", id}, {"n", 1}});
  return e;
}

std::vector<a2::NewEvent> batch(const std::string& stem, int from, int count, bool settled) {
  std::vector<a2::NewEvent> out;
  for (int i = from; i < from + count; ++i) {
    out.push_back(work(stem + std::to_string(i)));
    out.back().settled = settled;
  }
  return out;
}

a2::ChildEvent child(const std::string& id) {
  a2::ChildEvent c;
  c.id = id;
  c.type = "child";
  c.payload = a2::Json::array({1, 2});
  return c;
}

constexpr std::int64_t kNow = 1'700'000'000'000;
constexpr std::int64_t kTtl = 30'000;

}  // namespace

TEST_CASE(
    "the fast paths of append, claim_available and complete_attempt equal the general "
    "paths",
    "[redis][scripts][fast_path]") {
  Twins t;
  std::int64_t now = kNow;
  using scripts::Append;
  using scripts::ClaimAvailable;
  using scripts::CompleteAttempt;

  // Append: fresh batches (fast), a replay and a partly stored batch (owned ids hand off), an id
  // of another session, a batch over 100 events, causes, lanes, settled events, an origin.
  t.both_ways(Append{"s", now, batch("a", 1, 1, false), std::nullopt});
  t.both_ways(Append{"s", ++now, batch("one", 1, 1, false), std::nullopt});  // Split set.
  t.both_ways(Append{"s", ++now, batch("one", 1, 1, false), std::nullopt});  // Replay: dup.
  t.both_ways(Append{"s", ++now, batch("a", 2, 3, false), std::nullopt});
  t.both_ways(Append{"s", ++now, batch("a", 2, 3, false), std::nullopt});  // Replay: dup.
  t.both_ways(Append{"s", ++now, batch("a", 4, 2, false), std::nullopt});  // Partial.
  t.both_ways(Append{"t", ++now, batch("a", 1, 1, false), std::nullopt});  // Foreign.
  t.both_ways(Append{"s", ++now, {}, std::nullopt});                       // Empty.
  auto laned = batch("l", 1, 2, false);
  laned[0].lane = "lane-1";
  laned[1].lane = "lane-1";
  t.both_ways(Append{"s", ++now, laned, std::nullopt});
  t.both_ways(Append{"s", ++now, batch("f", 1, 2, true), std::nullopt});     // Settled facts.
  t.both_ways(Append{"v", ++now, batch("v", 1, 101, false), std::nullopt});  // Over 100.
  std::string big(40'000, 'x');  // A wake-up over the size rule carries no events.
  auto large = batch("big", 1, 2, false);
  large[0].payload = a2::Json(big);
  t.both_ways(Append{"s", ++now, large, std::nullopt});
  // One event: a payload over the rule, then the first event of two new sessions whose wake-up
  // entry `[1,"<id>","job","y...y"]` (payload size + id size + 15 bytes) is 32767 and 32768
  // bytes long: the rule counts each entry's size + 1, so the first is carried, the second not.
  auto single = batch("big1-", 1, 1, false);
  single[0].payload = a2::Json(big);
  t.both_ways(Append{"s", ++now, single, std::nullopt});
  for (std::size_t entry : {32'767, 32'768}) {
    auto edge = batch("edge-", 1, 1, false);
    edge[0].payload = a2::Json(std::string(entry - 15 - edge[0].id->size(), 'y'));
    t.both_ways(Append{"edge-" + std::to_string(entry), ++now, edge, std::nullopt});
  }

  // append_one: its fast path equals its general path (a new session without the split key,
  // then with it, a replay, an id of another session, a payload over the wake-up rule, the
  // rule's edge), and it answers, writes and wakes as append.lua does for the same event.
  {
    using scripts::AppendOne;
    const auto one = batch("one-", 1, 4, false);
    t.both_ways(AppendOne{"o", ++now, one[0]});
    t.both_ways(AppendOne{"o", ++now, one[1]});
    t.both_ways(AppendOne{"o", ++now, one[1]});  // Replay: dup.
    t.both_ways(AppendOne{"p", ++now, one[0]});  // Foreign.
    t.both_ways(AppendOne{"o", ++now, single[0]});
    for (std::size_t entry : {32'767, 32'768}) {
      auto edge = batch("edge1-", 1, 1, false);
      edge[0].payload = a2::Json(std::string(entry - 15 - edge[0].id->size(), 'y'));
      t.both_ways(AppendOne{"edge1-" + std::to_string(entry), ++now, edge[0]});
    }
    const auto alike = batch("alike-", 1, 2, false);
    for (const auto& e : alike) {
      const std::vector<a2::NewEvent> as_batch{e};
      ++now;
      t.across(AppendOne{"q", now, e}, Append{"q", now, as_batch, std::nullopt});
      t.across(AppendOne{"q", now, e}, Append{"q", now, as_batch, std::nullopt});  // Replay.
    }
    const std::vector<a2::NewEvent> alike_first{alike[0]};
    ++now;
    t.across(AppendOne{"r", now, alike[0]},
             Append{"r", now, alike_first, std::nullopt});  // Foreign.
    std::string big_one(40'000, 'z');
    auto big_event = batch("big-one-", 1, 1, false);
    big_event[0].payload = a2::Json(big_one);
    ++now;
    t.across(AppendOne{"q", now, big_event[0]}, Append{"q", now, big_event, std::nullopt});
    // An id this session used before its latest clear is free again: the fast path's MGET
    // does not read the boundary, so the hand-off completes it with a GET; a stale record
    // must append as new, not answer dup (append_one and append's batch of two alike).
    const auto before = batch("cleared-", 1, 2, false);
    const std::vector<a2::NewEvent> before_second{before[1]};
    t.both_ways(AppendOne{"c", ++now, before[0]});
    t.both_ways(Append{"c", ++now, before_second, std::nullopt});
    t.same_way(scripts::Clear{.session = "c",
                              .now = ++now,
                              .if_last_index = std::nullopt,
                              .cause = std::nullopt,
                              .marker_id = "c-marker",
                              .marker_type = "a2.clear"});
    t.check_same_messages();  // The clear's wake-ups, before the comparisons that follow.
    const auto again = t.both_ways(AppendOne{"c", ++now, before[0]});
    REQUIRE(again.is_array());
    CHECK(again.elements.at(0).str == "ok");
    CHECK(t.both_ways(Append{"c", ++now, before, std::nullopt}).elements.at(0).str == "partial");
    CHECK(t.both_ways(Append{"c", ++now, before_second, std::nullopt}).elements.at(0).str == "ok");
    CHECK(t.both_ways(AppendOne{"c", ++now, before[0]}).elements.at(0).str == "rows");
    CHECK(AppendOne::one_event(now, alike, std::nullopt) == false);  // Two events.
    CHECK(AppendOne::one_event(now, alike_first, std::nullopt));
    CHECK_FALSE(AppendOne::one_event(now, alike_first, 3));  // An origin.
    auto laned_one = alike_first;
    laned_one[0].lane = "";  // An empty lane is no lane (append.lua stores '' for both).
    CHECK(AppendOne::one_event(now, laned_one, std::nullopt));
    laned_one[0].lane = "l";
    CHECK_FALSE(AppendOne::one_event(now, laned_one, std::nullopt));
    auto later = alike_first;
    later[0].available_at_ms = now;  // Not after now: at once.
    CHECK(AppendOne::one_event(now, later, std::nullopt));
    later[0].available_at_ms = now + 1;
    CHECK_FALSE(AppendOne::one_event(now, later, std::nullopt));
    auto fact = alike_first;
    fact[0].settled = true;
    CHECK_FALSE(AppendOne::one_event(now, fact, std::nullopt));
    auto caused = alike_first;
    caused[0].cause = a2::EventCause{1, 1};
    CHECK_FALSE(AppendOne::one_event(now, caused, std::nullopt));
  }

  // Claim: every ready event in one hash (fast), busy, settled, over 100 ready, exclusions.
  const auto claimed = ClaimAvailable::decode(
      "test", "s", t.both_ways(ClaimAvailable{"s", "h1", ++now, now + kTtl, {}}));
  REQUIRE(claimed.verdict == a2::ClaimVerdict::claimed);
  t.both_ways(ClaimAvailable{"s", "h2", ++now, now + kTtl, {}});      // Busy.
  t.both_ways(ClaimAvailable{"empty", "h1", ++now, now + kTtl, {}});  // Settled.
  t.both_ways(ClaimAvailable{"v", "h1", ++now, now + kTtl, {}});      // 101 ready.
  const std::vector<std::int64_t> exclude{1};
  t.both_ways(ClaimAvailable{"t", "h1", ++now, now + kTtl, exclude});

  // Complete: the current attempt with no child, with children (fast), a stale attempt, a
  // replay, an owned child id, a laned parent.
  auto first = [&](std::int64_t index) {
    for (const auto& e : claimed.events)
      if (e.index == index) return e.attempt_count;
    FAIL("event " << index << " was not claimed");
    return std::int64_t{0};
  };
  t.both_ways(CompleteAttempt{"s", ++now, 1, first(1), {}});
  const std::vector<a2::ChildEvent> kids{child("k1"), child("k2")};
  t.both_ways(CompleteAttempt{"s", ++now, 2, first(2), kids});
  t.both_ways(CompleteAttempt{"s", ++now, 2, first(2), kids});      // Replay: dup.
  t.both_ways(CompleteAttempt{"s", ++now, 3, first(3) + 1, kids});  // Stale attempt.
  const std::vector<a2::ChildEvent> owned{child("k3"), child("a1")};
  t.both_ways(CompleteAttempt{"s", ++now, 3, first(3), owned});  // Owned child id.
  t.both_ways(CompleteAttempt{"s", ++now, 3, first(3), std::vector<a2::ChildEvent>{child("k4")}});
  t.both_ways(CompleteAttempt{"s", ++now, 99, 1, {}});  // Above the head.

  // A failed attempt, then claims after the leases expired (the claim is taken over).
  t.same_way(scripts::FailAttempt{"s", 4, first(4), "boom", 3, ++now});
  now += kTtl + 1;
  const auto again = ClaimAvailable::decode(
      "test", "s", t.both_ways(ClaimAvailable{"s", "h3", now, now + kTtl, {}}));
  REQUIRE(again.verdict == a2::ClaimVerdict::claimed);
  for (const auto& e : again.events)
    t.both_ways(CompleteAttempt{"s", ++now, e.index, e.attempt_count,
                                std::vector<a2::ChildEvent>{child("r" + std::to_string(e.index))}});

  // Metadata in two hashes: 999 settled events, then work at 1000..1002 (chunks 0 and 1), so
  // the claim hands off; a completion of a parent in chunk 1.
  for (int i = 0; i < 10; ++i)
    t.both_ways(Append{"w", ++now, batch("w" + std::to_string(i) + "-", 0, i < 9 ? 100 : 99, true),
                       std::nullopt});
  t.both_ways(Append{"w", ++now, batch("wj", 1, 3, false), std::nullopt});
  const auto spread = ClaimAvailable::decode(
      "test", "w", t.both_ways(ClaimAvailable{"w", "h1", ++now, now + kTtl, {}}));
  REQUIRE(spread.verdict == a2::ClaimVerdict::claimed);
  REQUIRE(spread.events.size() == 3);
  for (const auto& e : spread.events)
    t.both_ways(CompleteAttempt{"w", ++now, e.index, e.attempt_count, {}});
  t.both_ways(Append{"w", ++now, batch("wk", 1, 2, false), std::nullopt});
  const auto chunk1 = ClaimAvailable::decode(
      "test", "w", t.both_ways(ClaimAvailable{"w", "h1", ++now, now + kTtl, {}}));
  REQUIRE(chunk1.verdict == a2::ClaimVerdict::claimed);
  for (const auto& e : chunk1.events)
    t.both_ways(CompleteAttempt{"w", ++now, e.index, e.attempt_count, kids});

  // Bounded claims (max_events) and delayed work (av): the fast claim stops after the limit and
  // skips delayed events (busy until the earliest av or lease end); scheduled events and children
  // hand off to the general paths of append and complete_attempt; a bounded claim with exclusions
  // or over several hashes runs the general path.
  t.both_ways(Append{"m", ++now, batch("m", 1, 5, false), std::nullopt});
  const auto two = ClaimAvailable::decode(
      "test", "m", t.both_ways(ClaimAvailable{"m", "h1", ++now, now + kTtl, {}, 2}));
  REQUIRE(two.verdict == a2::ClaimVerdict::claimed);
  REQUIRE(two.events.size() == 2);
  CHECK(two.events[1].index == 2);
  const auto next = ClaimAvailable::decode(
      "test", "m", t.both_ways(ClaimAvailable{"m", "h2", ++now, now + kTtl, {}, 2}));
  REQUIRE(next.events.size() == 2);
  CHECK(next.events[0].index == 3);
  t.both_ways(ClaimAvailable{"m", "h2", ++now, now + kTtl, exclude, 1});  // General: 5.
  t.both_ways(ClaimAvailable{"m", "h2", ++now, now + kTtl, {}, 1});       // Busy.
  auto scheduled = batch("d", 1, 3, false);
  scheduled[0].available_at_ms = now + 5'000;
  scheduled[1].available_at_ms = now;  // Not after now: stores nothing.
  scheduled[2].available_at_ms = now + 2'000;
  t.both_ways(Append{"d", ++now, scheduled, std::nullopt});
  const auto undelayed = ClaimAvailable::decode(
      "test", "d", t.both_ways(ClaimAvailable{"d", "h1", ++now, now + kTtl, {}, 5}));
  REQUIRE(undelayed.events.size() == 1);
  CHECK(undelayed.events[0].index == 2);
  const auto delayed = ClaimAvailable::decode(
      "test", "d", t.both_ways(ClaimAvailable{"d", "h1", ++now, now + kTtl, {}}));
  REQUIRE(delayed.verdict == a2::ClaimVerdict::busy);
  CHECK(delayed.retry_at == now - 3 + 2'000);  // The earliest av, before the lease of 2.
  const std::int64_t retry_at = now + 1 + 1'000;
  t.same_way(scripts::FailAttempt{"d", 2, 1, "later", 3, ++now, retry_at});
  const auto retry = ClaimAvailable::decode(
      "test", "d", t.both_ways(ClaimAvailable{"d", "h1", ++now, now + kTtl, {}}));
  REQUIRE(retry.verdict == a2::ClaimVerdict::busy);
  now += 1'000;
  const auto after = ClaimAvailable::decode(
      "test", "d", t.both_ways(ClaimAvailable{"d", "h1", now, now + kTtl, {}, 1}));
  REQUIRE(after.events.size() == 1);
  CHECK(after.events[0].index == 2);
  CHECK(after.events[0].attempt_count == 2);
  CHECK(after.events[0].available_at == retry_at);  // The claim leaves the past delay.
  std::vector<a2::ChildEvent> later{child("dk1"), child("dk2")};
  later[1].available_at_ms = now + 10'000;
  t.both_ways(CompleteAttempt{"d", ++now, 2, 2, later});  // Hands off: a scheduled child.
  now += 5'000;
  t.both_ways(ClaimAvailable{"d", "h1", now, now + kTtl, {}, 2});  // 1, 3 (dk1, dk2 later).
  t.both_ways(Append{"w", ++now, batch("wm", 1, 3, false), std::nullopt});
  t.both_ways(ClaimAvailable{"w", "h1", ++now, now + kTtl, {}, 2});  // Several hashes.

  // claim_next: the fast completion hands its reply to the claim (claimed, busy, settled); a
  // superseded completion still claims; an error claims nothing.
  t.both_ways(Append{"n", ++now, batch("n", 1, 4, false), std::nullopt});
  const auto one = ClaimAvailable::decode(
      "test", "n", t.both_ways(ClaimAvailable{"n", "h1", ++now, now + kTtl, {}, 1}));
  REQUIRE(one.events.size() == 1);
  const auto chained = CompleteAttempt::decode(
      "test", "n",
      t.both_ways(CompleteAttempt{"n", ++now, 1, 1, std::vector<a2::ChildEvent>{child("nk1")},
                                  scripts::NextClaim{"h1", now + kTtl, 2}}));
  REQUIRE(chained.verdict == CompleteAttempt::Verdict::ok);
  REQUIRE(chained.next);
  REQUIRE(chained.next->events.size() == 2);
  CHECK(chained.next->events[0].index == 2);
  t.both_ways(CompleteAttempt{"n", ++now, 2, 1, {}, scripts::NextClaim{"h1", now + kTtl, 5}});
  t.both_ways(CompleteAttempt{"n", ++now, 3, 1, {}, scripts::NextClaim{"h2", now + kTtl, 1}});
  t.both_ways(CompleteAttempt{"n", ++now, 3, 1, {}, scripts::NextClaim{"h2", now + kTtl, 1}});
  t.both_ways(CompleteAttempt{"n", ++now, 99, 1, {}, scripts::NextClaim{"h2", now + kTtl, 1}});
  now += kTtl + 1;
  const auto drained = CompleteAttempt::decode(
      "test", "n",
      t.both_ways(CompleteAttempt{"n", ++now, 4, 1, {}, scripts::NextClaim{"h1", now + kTtl, 9}}));
  REQUIRE(drained.next);

  // One ready event and one child (the one-event branches of the claim's and the completion's
  // fast paths): a claim without a limit, a held event (busy), a completion with one child on a
  // session without the split key (the original package writes none), a claim with
  // max_events = 1, a delayed event (busy until its av), one-child wake-ups whose entry
  // `[<index>,"<id>","child","y...y"]` is 32767 and 32768 bytes and one over the rule, and a
  // ready event whose stream entry is gone (missing).
  t.both_ways(Append{"one", ++now, batch("o", 1, 1, false), std::nullopt});
  t.raw({"DEL", t.keys().meta_split("one")});
  const auto solo = ClaimAvailable::decode(
      "test", "one", t.both_ways(ClaimAvailable{"one", "h1", ++now, now + kTtl, {}}));
  REQUIRE(solo.verdict == a2::ClaimVerdict::claimed);
  REQUIRE(solo.events.size() == 1);
  t.both_ways(ClaimAvailable{"one", "h2", ++now, now + kTtl, {}});  // Held: busy.
  t.both_ways(CompleteAttempt{"one", ++now, 1, 1, std::vector<a2::ChildEvent>{child("o2")}});
  auto claim_one = [&](std::int64_t index) {
    const auto c = ClaimAvailable::decode(
        "test", "one", t.both_ways(ClaimAvailable{"one", "h1", ++now, now + kTtl, {}, 1}));
    REQUIRE(c.verdict == a2::ClaimVerdict::claimed);
    REQUIRE(c.events.size() == 1);
    CHECK(c.events[0].index == index);
    return c.events[0].attempt_count;
  };
  std::int64_t attempt = claim_one(2);
  t.same_way(scripts::FailAttempt{"one", 2, attempt, "later", 3, ++now, now + 1'000});
  t.both_ways(ClaimAvailable{"one", "h1", ++now, now + kTtl, {}});  // Delayed: busy.
  now += 1'000;
  attempt = claim_one(2);
  std::int64_t parent = 2;
  for (std::size_t entry : {std::size_t{32'767}, std::size_t{32'768}, std::size_t{40'000}}) {
    a2::ChildEvent edge = child("oe" + std::to_string(entry));
    // The entry: brackets, the index (1 digit), the quoted id and type, 3 commas, the payload.
    edge.payload = a2::Json(std::string(entry - 2 - 1 - (edge.id->size() + 2) - 7 - 3 - 2, 'y'));
    t.both_ways(CompleteAttempt{"one", ++now, parent, attempt, std::vector<a2::ChildEvent>{edge}});
    attempt = claim_one(++parent);
  }
  t.both_ways(
      CompleteAttempt{"one", ++now, parent, attempt, std::vector<a2::ChildEvent>{child("o9")}});
  t.raw({"XDEL", t.keys().log("one"), std::to_string(parent + 1) + "-0"});
  t.both_ways(ClaimAvailable{"one", "h1", ++now, now + kTtl, {}});  // Missing.

  CHECK(t.compared() > 62);
  CHECK(t.messages() >= 40);
}
