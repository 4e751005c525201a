// SPDX-License-Identifier: MIT
// Work discovery of the Redis store: find_work (one read-only script) and the safety sweep
// (docs/redis-layout.md#work-index).

#include "redis/discovery.hpp"

#include <utility>
#include <vector>

#include "a2/detail/redis_key_words.hpp"
#include "a2/detail/validate.hpp"
#include "redis/codec.hpp"
#include "redis/errors.hpp"
#include "redis/scripts/find_work.hpp"
#include "redis/scripts/index_session.hpp"
#include "redis/store.hpp"

namespace a2::redis::detail {

std::string glob_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::optional<std::string> session_of(const Keys& keys, std::string_view name,
                                      std::string_view word) {
  const std::size_t head = keys.prefix.size() + 1;  // "<prefix>:"
  const std::size_t tail = word.size() + 1;         // ":<word>"
  if (name.size() <= head + tail || name.compare(0, keys.prefix.size(), keys.prefix) != 0 ||
      name[keys.prefix.size()] != ':' || name[name.size() - tail] != ':' ||
      name.compare(name.size() - word.size(), word.size(), word) != 0)
    return std::nullopt;
  std::string session(name.substr(head, name.size() - head - tail));
  try {
    a2::detail::check_session_id("sweep_work", session);
  } catch (const InvalidArgument&) {
    return std::nullopt;
  }
  return session;
}

namespace {

// One pipelined round trip of index_session.lua for `sessions`; on NOSCRIPT the script is
// loaded and the round trip sent once more (the script only ever lowers an entry, so running it
// twice changes nothing more).
std::vector<Reply> index_sessions(Connection& c, std::string_view op, const Keys& keys,
                                  const std::vector<std::string>& sessions, std::int64_t now) {
  const auto& script = scripts::IndexSession::script();
  std::vector<Argv> commands;
  commands.reserve(sessions.size());
  for (const auto& s : sessions) {
    const auto call = scripts::IndexSession{s, now}.encode(keys);
    Argv argv{"EVALSHA", std::string(script.sha1), std::to_string(call.keys.size())};
    argv.insert(argv.end(), call.keys.begin(), call.keys.end());
    argv.insert(argv.end(), call.argv.begin(), call.argv.end());
    commands.push_back(std::move(argv));
  }
  auto replies = c.pipeline(op, commands);
  bool missing = false;
  for (const auto& r : replies)
    if (r.is_error() && r.str.rfind("NOSCRIPT", 0) == 0) missing = true;
  if (missing) {
    a2::detail::log_event(LogLevel::info, "script_reload",
                          "a2 redis " + std::string(op) + ": the server had no script " +
                              std::string(script.name) + " (NOSCRIPT); loading it");
    Reply loaded = c.command(op, {"SCRIPT", "LOAD", std::string(script.text)});
    if (loaded.is_error())
      fail(op, "SCRIPT LOAD " + std::string(script.name) + " failed: " + loaded.str);
    replies = c.pipeline(op, commands);
  }
  for (const auto& r : replies)
    if (r.is_error()) fail(op, "script " + std::string(script.name) + " failed: " + r.str);
  return replies;
}

}  // namespace

SweepResult sweep(Core& core, Clock& clock) {
  constexpr std::string_view op = "sweep_work";
  namespace words = a2::detail::redis_key_words;
  const std::string pattern = glob_escape(core.keys.prefix) + ":*:" + std::string(words::kReady);
  SweepResult result;
  std::string cursor = "0";
  do {
    // Each step is its own round trips under its own deadline: a pass over a large keyspace
    // may take longer than one call's command_timeout.
    CallDeadline deadline(core.options.command_timeout);
    auto lease = core.acquire(op);
    const Reply page = lease->command(op, {"SCAN", cursor, "MATCH", pattern, "COUNT",
                                           std::to_string(a2::detail::kSweepScanCount)});
    if (page.is_error()) fail(op, "SCAN failed: " + page.str);
    if (!page.is_array() || page.size() != 2 || !page[1].is_array())
      unexpected(op, "SCAN reply is not [cursor, keys]");
    cursor = text(op, page[0]);
    std::vector<std::string> sessions;
    for (const auto& key : page[1].elements)
      if (auto s = session_of(core.keys, text(op, key), words::kReady)) sessions.push_back(*s);
    if (sessions.empty()) continue;
    const auto replies = index_sessions(*lease, op, core.keys, sessions, clock.now_ms());
    for (std::size_t i = 0; i < sessions.size(); ++i)
      if (auto at = scripts::IndexSession::decode(op, replies[i]))
        result.indexed.push_back(SessionWork{sessions[i], *at});
  } while (cursor != "0");
  return result;
}

WorkPage RedisStore::do_find_work(const FindWorkRequest& request) {
  constexpr std::string_view op = "find_work";
  return guard(op, [&] {
    const scripts::FindWork call{request};
    return call.decode(op, script(op, call));
  });
}

SweepResult RedisStore::do_sweep_work() {
  return guarded("sweep_work", [&] { return sweep(*core_, clock()); });
}

}  // namespace a2::redis::detail
