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
    // One pipelined round trip; index_session.lua only ever lowers an entry, so a second run
    // after NOSCRIPT changes nothing more.
    const std::int64_t now = clock.now_ms();
    std::vector<scripts::Call> calls;
    calls.reserve(sessions.size());
    for (const auto& s : sessions) calls.push_back(scripts::IndexSession{s, now}.encode(core.keys));
    const auto replies =
        scripts::run_script_pipeline(*lease, op, scripts::IndexSession::script(), calls);
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
