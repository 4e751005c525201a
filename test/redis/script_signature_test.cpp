// SPDX-License-Identifier: MIT
// Each typed caller of src/redis/scripts/ matches its Lua script: the caller's declared KEYS and
// ARGV (kKeys, kArgv) equal the script's `-- @keys` / `-- @argv` header lines, and an encoding of
// sample arguments fits that signature exactly (counts, repetitions, and the kind of each key).
// Every script of lua/ has a caller here. No server needed.

#include <array>
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "redis/scripts/append.hpp"
#include "redis/scripts/claim_available.hpp"
#include "redis/scripts/clear.hpp"
#include "redis/scripts/complete_attempt.hpp"
#include "redis/scripts/dead_letters.hpp"
#include "redis/scripts/fail_attempt.hpp"
#include "redis/scripts/find_work.hpp"
#include "redis/scripts/held_claims.hpp"
#include "redis/scripts/index_session.hpp"
#include "redis/scripts/inspect_session.hpp"
#include "redis/scripts/presence.hpp"
#include "redis/scripts/put_snapshots.hpp"
#include "redis/scripts/read_state.hpp"
#include "redis/scripts/reclaim.hpp"
#include "redis/scripts/redrive.hpp"
#include "redis/scripts/release_claims.hpp"
#include "redis/scripts/renew_claims.hpp"

namespace {

namespace scripts = a2::redis::detail::scripts;
using a2::redis::detail::Argv;
using a2::redis::detail::Keys;
using a2::redis::detail::Resp;

// The text after "-- @<tag>" on the script's header line; nullopt when absent.
std::optional<std::string> header_line(std::string_view text, std::string_view tag) {
  const std::string marker = "-- @" + std::string(tag);
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    std::string_view line = text.substr(at, end - at);
    if (line.substr(0, 3) != "-- ") break;  // The header is the leading comment block.
    if (line.substr(0, marker.size()) == marker &&
        (line.size() == marker.size() || line[marker.size()] == ' '))
      return std::string(line.size() > marker.size() ? line.substr(marker.size() + 1) : "");
    at = end + 1;
  }
  return std::nullopt;
}

// A parsed signature: a name, `name*count` or `{ ... }*count`.
struct Item {
  std::string name;   // Empty for a group.
  std::string count;  // Empty: exactly once.
  std::vector<Item> group;
};

std::vector<Item> parse(std::string_view sig, std::size_t& at, bool nested) {
  std::vector<Item> items;
  while (at < sig.size()) {
    if (sig[at] == ' ') {
      ++at;
      continue;
    }
    Item item;
    if (sig[at] == '{') {
      ++at;
      item.group = parse(sig, at, true);
      REQUIRE(at < sig.size());
      REQUIRE(sig[at] == '}');
      ++at;
      REQUIRE(at < sig.size());
      REQUIRE(sig[at] == '*');
    } else if (sig[at] == '}') {
      REQUIRE(nested);
      return items;
    } else {
      while (at < sig.size() && sig[at] != ' ' && sig[at] != '*' && sig[at] != '}')
        item.name += sig[at++];
    }
    if (at < sig.size() && sig[at] == '*') {
      ++at;
      while (at < sig.size() && sig[at] != ' ' && sig[at] != '}') item.count += sig[at++];
      REQUIRE_FALSE(item.count.empty());
    }
    items.push_back(std::move(item));
  }
  REQUIRE_FALSE(nested);
  return items;
}

std::vector<Item> parse(std::string_view sig) {
  std::size_t at = 0;
  return parse(sig, at, false);
}

// Walks `items` over `values` from `at`, recording each named value (the last one wins), and
// calls check(name, value) for each.
template <class Check>
void walk(const std::vector<Item>& items, const Argv& values, std::size_t& at,
          std::map<std::string, std::string>& named, const Check& check) {
  for (const auto& item : items) {
    std::int64_t times = 1;
    if (!item.count.empty()) {
      INFO("count " << item.count);
      REQUIRE(named.count(item.count) == 1);
      times = std::stoll(named[item.count]);
      REQUIRE(times >= 0);
    }
    for (std::int64_t t = 0; t < times; ++t) {
      if (!item.group.empty()) {
        walk(item.group, values, at, named, check);
        continue;
      }
      INFO("value " << item.name << " at " << at);
      REQUIRE(at < values.size());
      named[item.name] = values[at];
      check(item.name, values[at]);
      ++at;
    }
  }
}

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

// Each key name of a signature names a kind of key (src/redis/keys.hpp).
void check_key(const std::string& name, const std::string& key) {
  INFO("key " << name << " = " << key);
  static const std::set<std::string> kSuffixed = {
      "log", "count", "meta", "pending", "ready", "meta-split", "presence", "snapshot-pin-counts"};
  if (name == "work") {
    CHECK(key == "p:work");  // The work index of the prefix: one ':' only.
    return;
  }
  if (kSuffixed.count(name))
    CHECK(ends_with(key, ":" + name));
  else if (name == "id" || name == "marker-id")
    CHECK(contains(key, ":ids:"));
  else if (name == "pins")
    CHECK(contains(key, ":snapshot-pins:"));
  else if (name == "snap")
    CHECK(contains(key, ":snap:"));
  else if (name == "snap-history")
    CHECK(contains(key, ":snap-history:"));
  else if (name == "moved-log")
    CHECK(contains(key, ":cleared:"));
  else
    FAIL("no rule for the key name '" << name << "': add one to check_key");
}

void check_arg(const std::string& name, const std::string& value) {
  INFO("argv " << name << " = " << value);
  if (name == "notify") CHECK(ends_with(value, ":notify"));
  if (name == "pin_prefix") CHECK(ends_with(value, ":snapshot-pins:"));
  if (name == "session") CHECK(value == "s");
}

std::set<std::string>& covered() {
  static std::set<std::string> names;
  return names;
}

template <class Script>
void check_caller(const Script& sample) {
  const auto& script = Script::script();
  INFO("script " << script.name);
  covered().insert(std::string(script.name));
  const auto keys_line = header_line(script.text, "keys");
  const auto argv_line = header_line(script.text, "argv");
  REQUIRE(keys_line);
  REQUIRE(argv_line);
  CHECK(*keys_line == Script::kKeys);
  CHECK(*argv_line == Script::kArgv);

  const Keys k{"p"};
  const scripts::Call call = sample.encode(k);
  std::map<std::string, std::string> named;
  std::size_t at = 0;
  const Argv argv = call.argv.values();
  const Argv keys = call.keys.values();
  REQUIRE(argv.size() == call.argv.size());
  REQUIRE(keys.size() == call.keys.size());
  walk(parse(Script::kArgv), argv, at, named, check_arg);
  CHECK(at == argv.size());
  at = 0;
  walk(parse(Script::kKeys), keys, at, named, check_key);
  CHECK(at == keys.size());
}

a2::NewEvent event(const std::string& id) {
  a2::NewEvent e;
  e.id = id;
  e.type = "t";
  e.payload = a2::Json::object();
  return e;
}

}  // namespace

TEST_CASE("every typed script caller matches its script's declared KEYS and ARGV",
          "[redis][scripts][unit]") {
  const std::vector<a2::NewEvent> events{event("a"), event("b")};
  check_caller(scripts::Append{"s", 1, events, 3});
  check_caller(scripts::Append{"s", 1, {}, std::nullopt});
  std::vector<a2::NewEvent> scheduled{event("c")};
  scheduled[0].available_at_ms = 5;
  check_caller(scripts::Append{"s", 1, scheduled, std::nullopt});
  check_caller(scripts::AppendOne{"s", 1, events[0]});
  const std::vector<std::int64_t> exclude{4, 5, 6};
  check_caller(scripts::ClaimAvailable{"s", "h", 1, 2, exclude});
  check_caller(scripts::ClaimAvailable{"s", "h", 1, 2, {}});
  check_caller(scripts::ClaimAvailable{"s", "h", 1, 2, exclude, 2});
  const std::vector<a2::ClaimRef> claims{{1, 1}, {2, 3}};
  check_caller(scripts::RenewClaims{"s", "h", 1, 2, claims});
  check_caller(scripts::ReleaseClaims{"s", "h", 1, claims});
  check_caller(scripts::ReleaseClaims{"s", "h", 1, claims, 7});
  check_caller(scripts::HeldClaims{"s", "h", 1});
  a2::ChildEvent child;
  child.id = "c";
  child.type = "t";
  const std::vector<a2::ChildEvent> children{child, child, child};
  check_caller(scripts::CompleteAttempt{"s", 1, 2, 1, children});
  check_caller(scripts::CompleteAttempt{"s", 1, 2, 1, {}, scripts::NextClaim{"h", 5, 2}});
  std::vector<a2::Completion> completions(3);
  completions[0].index = 1;
  completions[0].events = children;
  completions[1].index = 2;
  completions[2].index = 3;
  completions[2].events = {child};
  check_caller(scripts::CompleteAttempts{"s", 1, completions});
  check_caller(scripts::CompleteAttempts{"s", 1, completions, scripts::NextClaim{"h", 5, 1}});
  check_caller(scripts::CompleteAttempts{"s", 1, {}, scripts::NextClaim{"h", 5, 1}});
  check_caller(scripts::FailAttempt{"s", 2, 1, "boom", 3, 1});
  check_caller(scripts::FailAttempt{"s", 2, 1, "boom", 3, 1, 7});
  check_caller(scripts::DeadLetters{"s"});
  check_caller(scripts::Redrive{"s", 2, a2::RedriveAction::skip, 1});
  check_caller(scripts::ReadState{"s", "r", 4});
  std::vector<a2::SnapshotWrite> writes(3);
  writes[0].index = 1;
  writes[1].index = 2;
  writes[1].pin_event_indexes = {3, 4};
  writes[2].index = 5;
  writes[2].pin_event_indexes = {6};
  check_caller(scripts::PutSnapshots{"s", "r", 1, writes});
  check_caller(scripts::Clear{"s", 1, 2, a2::EventCause{1, 1}, "m", "a2.clear"});
  check_caller(scripts::ReclaimBatch{"s", 256});
  const std::vector<scripts::ReclaimBatch::Entry> entries{{"1", "a"}, {"2", "b"}};
  check_caller(scripts::Reclaim{"s", "p:s:cleared:m", &entries});
  check_caller(scripts::PresencePatch{"s", 1, "who", std::string("{}"), 2});
  check_caller(scripts::PresenceRead{"s", 1});
  const a2::FindWorkRequest first_page{};
  check_caller(scripts::FindWork{first_page});
  const a2::FindWorkRequest next_page{.after = a2::WorkCursor{5, "s"}, .due_by_ms = 9, .limit = 2};
  check_caller(scripts::FindWork{next_page});
  check_caller(scripts::IndexSession{"s", 1});
  check_caller(scripts::InspectSession{"s", 1, true});

  // Every script of lua/ has a typed caller checked above.
  std::set<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(A2_LUA_DIR))
    if (entry.path().extension() == ".lua") files.insert(entry.path().stem().string());
  CHECK(files == covered());
}

TEST_CASE("script arguments are written in RESP as they are added and read back",
          "[redis][scripts][unit]") {
  scripts::Args args{"a", ""};
  args.push_back(std::string(300, 'x'));
  args.push_joined(std::array<std::string_view, 3>{"p", ":", "q"});
  args.push_written([](std::string& out) { out += "written"; });
  args.push_written([](std::string&) {});
  CHECK(args.size() == 6);
  CHECK(args.values() == Argv{"a", "", std::string(300, 'x'), "p:q", "written", ""});
  // The bytes Resp writes for the same values, one argument after another.
  std::string expected;
  Resp resp(expected);
  for (const auto& v : args.values()) resp.arg(v);
  CHECK(args.encoded() == expected);
  args = {"only"};
  CHECK(args.values() == Argv{"only"});
  CHECK(args.encoded() == "$4\r\nonly\r\n");
}

TEST_CASE("the signature check notices a caller that does not fit its declaration",
          "[redis][scripts][unit]") {
  // The walk itself must fail on a short or long encoding; shown on a fixed signature.
  std::map<std::string, std::string> named;
  std::size_t at = 0;
  const Argv fits{"s", "1", "2", "a", "b", "c", "d", "x"};
  walk(parse("session now n {id type}*n notify"), fits, at, named,
       [](const std::string&, const std::string&) {});
  CHECK(at == fits.size());
  named.clear();
  at = 0;
  const Argv longer{"s", "1", "1", "a", "b", "c", "x"};
  walk(parse("session now n {id type}*n notify"), longer, at, named,
       [](const std::string&, const std::string&) {});
  CHECK(at != longer.size());
  CHECK(header_line("-- SPDX\n-- @keys a b\n-- @argv\nlocal x = 1\n", "argv") == "");
  CHECK(header_line("-- SPDX\n-- @keys a b\nlocal x = 1\n-- @argv c\n", "argv") == std::nullopt);
}
