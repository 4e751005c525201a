// SPDX-License-Identifier: MIT
// The inspection reads of the Redis store (docs/redis-layout.md#inspection): list_sessions (SCAN
// of the counter keys, then one pipelined round trip of inspect_session.lua for the page) and
// inspect_session (the script with detail, then the reducers' heads found by SCAN).

#include <algorithm>
#include <set>

#include "a2/detail/json_text.hpp"
#include "a2/detail/redis_key_words.hpp"
#include "a2/detail/validate.hpp"
#include "redis/codec.hpp"
#include "redis/discovery.hpp"
#include "redis/errors.hpp"
#include "redis/scripts/inspect_session.hpp"
#include "redis/store.hpp"

namespace a2::redis::detail {
namespace {

namespace words = a2::detail::redis_key_words;

// SCAN steps one list_sessions call takes at most: a keyspace with few sessions among many other
// keys gives short (even empty) pages instead of a long call.
constexpr int kListScanSteps = 16;
// Keys per SCAN step of list_sessions per session of room left in the page.
constexpr std::int64_t kScanWidth = 4;

struct ScanStep {
  std::string cursor;
  std::vector<std::string> keys;
};

ScanStep scan(Connection& c, std::string_view op, const std::string& cursor,
              const std::string& pattern, std::int64_t count) {
  const Reply page =
      c.command(op, {"SCAN", cursor, "MATCH", pattern, "COUNT", std::to_string(count)});
  if (page.is_error()) fail(op, "SCAN failed: " + page.str);
  if (!page.is_array() || page.size() != 2 || !page[1].is_array())
    unexpected(op, "SCAN reply is not [cursor, keys]");
  ScanStep step{text(op, page[0]), {}};
  for (const auto& key : page[1].elements) step.keys.push_back(text(op, key));
  return step;
}

// Where a list_sessions page starts: a SCAN cursor, and inside a split step the last session
// taken from it. Text: the SCAN cursor itself (digits without a leading 0; "" or "0" = the
// start), or for a split step "0", two digits of the cursor's length, the cursor, then each byte
// of the session id as three decimal digits. Digits only, as the validator requires.
struct Position {
  std::string cursor = "0";
  std::string after{};

  std::string text() const {
    if (after.empty()) return cursor;
    std::string out = "0";
    if (cursor.size() < 10) out += '0';
    out += std::to_string(cursor.size()) + cursor;
    for (unsigned char c : after) {
      const std::string digits = std::to_string(c);
      out += std::string(3 - digits.size(), '0') + digits;
    }
    return out;
  }

  static Position parse(std::string_view op, const std::string& t) {
    if (t.empty() || t == "0") return {};
    auto bad = [&]() -> Position {
      a2::detail::invalid(
          op, "cursor " + a2::detail::quote_arg(t) + " is not a cursor this store returned");
    };
    auto scan_cursor = [](const std::string& c) {  // Decimal digits of an unsigned 64-bit number.
      return c.size() < 20 || (c.size() == 20 && c <= "18446744073709551615");
    };
    if (t[0] != '0') return scan_cursor(t) ? Position{t, {}} : bad();
    if (t[0] != '0' || t.size() < 3) return bad();
    const std::size_t length = static_cast<std::size_t>(std::stoi(t.substr(1, 2)));
    if (length < 1 || length > 20 || t.size() < 3 + length || (t.size() - 3 - length) % 3 != 0)
      return bad();
    Position p{t.substr(3, length), {}};
    if (p.cursor[0] == '0' || !scan_cursor(p.cursor)) return bad();
    for (std::size_t at = 3 + length; at < t.size(); at += 3) {
      const int byte = std::stoi(t.substr(at, 3));
      if (byte > 255) return bad();
      p.after += static_cast<char>(byte);
    }
    try {
      a2::detail::check_session_id(op, p.after);
    } catch (const InvalidArgument&) {
      return bad();
    }
    return p;
  }
};

// The index of a stored checkpoint JSON {"index":I,...}; nullopt when it has none.
std::optional<std::int64_t> checkpoint_index(std::string_view op, const std::string& raw) {
  Json checkpoint;
  try {
    checkpoint = a2::detail::parse_stored_json(raw, a2::detail::kEnvelopeLevels);
  } catch (const Json::exception&) {
    unexpected(op, "a stored checkpoint is not JSON");
  }
  if (!checkpoint.is_object() || !checkpoint.contains("index") || !checkpoint["index"].is_number())
    return std::nullopt;
  return parse_number(a2::detail::json_text(checkpoint["index"]));
}

}  // namespace

// SCAN `<prefix>:*:count` (the prefix's glob characters escaped) from the cursor, step by step
// while the page has room: each step asks for kScanWidth keys per session of room left, then
// (when it brought more sessions than fit) for the room left, and a step that still brings more
// is not taken (the next page starts with it). A key whose middle is no
// session id (a reducer named "count" makes `p:S:snap:count`) is skipped. Only when the smallest
// step from the page's start (COUNT 1: one hash bucket, a few during a rehash) holds more
// sessions than the limit is a step split, by session id (Position).
SessionPage RedisStore::do_list_sessions(const ListSessionsRequest& request) {
  constexpr std::string_view op = "list_sessions";
  a2::detail::check_scan_cursor(op, request.cursor);
  const Position start = Position::parse(op, request.cursor);
  return guard(op, [&] {
    // Read first, as every operation reads the clock (a page may find no session to judge by it).
    const std::int64_t now = clock().now_ms();
    const std::string pattern = glob_escape(k().prefix) + ":*:" + std::string(words::kCount);
    auto lease = core_->acquire(op);
    // The sessions of one SCAN step, sorted, without duplicates or those already taken.
    std::set<std::string> seen;
    auto step_sessions = [&](const ScanStep& step, const std::string& after) {
      std::vector<std::string> found;
      for (const auto& key : step.keys)
        if (auto s = session_of(k(), key, words::kCount); s && !seen.count(*s) && *s > after)
          found.push_back(std::move(*s));
      std::sort(found.begin(), found.end());
      found.erase(std::unique(found.begin(), found.end()), found.end());
      return found;
    };
    std::vector<std::string> sessions;
    auto take = [&](std::vector<std::string>& found) {
      for (auto& s : found)
        if (seen.insert(s).second) sessions.push_back(std::move(s));
    };
    std::string cursor = start.cursor;
    SessionPage page;
    bool split = false;          // The page ends inside a step.
    bool ended = false;          // SCAN returned cursor 0.
    if (!start.after.empty()) {  // The rest of a split step.
      const ScanStep step = scan(*lease, op, cursor, pattern, 1);
      auto found = step_sessions(step, start.after);
      if (static_cast<std::int64_t>(found.size()) > request.limit) {
        found.resize(static_cast<std::size_t>(request.limit));
        page.next_cursor = Position{cursor, found.back()}.text();
        split = true;
      } else {
        cursor = step.cursor;
        ended = cursor == "0";
      }
      take(found);
    }
    for (int n = 0; !split && !ended && n < kListScanSteps &&
                    static_cast<std::int64_t>(sessions.size()) < request.limit;
         ++n) {
      const auto room = request.limit - static_cast<std::int64_t>(sessions.size());
      // A session has several keys (log, count, metadata, queues, one id key per event), so
      // a step of kScanWidth times the room rarely overflows; one that does is taken again
      // with COUNT the room.
      ScanStep step = scan(*lease, op, cursor, pattern, room * kScanWidth);
      auto found = step_sessions(step, "");
      if (static_cast<std::int64_t>(found.size()) > room) {
        step = scan(*lease, op, cursor, pattern, room);
        found = step_sessions(step, "");
      }
      if (static_cast<std::int64_t>(found.size()) > room) {
        if (!sessions.empty()) break;  // Not taken: the next page starts with this step.
        step = scan(*lease, op, cursor, pattern, 1);
        found = step_sessions(step, "");
        if (static_cast<std::int64_t>(found.size()) > room) {
          found.resize(static_cast<std::size_t>(room));
          page.next_cursor = Position{cursor, found.back()}.text();
          take(found);
          split = true;
          break;
        }
      }
      take(found);
      cursor = std::move(step.cursor);
      ended = cursor == "0";
    }
    if (!split) page.next_cursor = ended ? "" : cursor;
    if (sessions.empty()) return page;
    std::vector<scripts::Call> calls;
    calls.reserve(sessions.size());
    for (const auto& s : sessions) calls.push_back(scripts::InspectSession{s, now}.encode(k()));
    const auto replies =
        scripts::run_script_pipeline(*lease, op, scripts::InspectSession::script(), calls);
    for (std::size_t i = 0; i < sessions.size(); ++i) {
      auto summary = scripts::InspectSession::decode(op, sessions[i], replies[i]).summary;
      if (summary.head >= 1) page.sessions.push_back(std::move(summary));  // Not deleted since.
    }
    return page;
  });
}

// The script with detail, then SCAN `<prefix>:<S>:snap:*` for the reducers (a2 registers only
// the original package's heads in snap-reducers), their heads (one pipelined GET) and the
// history entries between the boundary and each head (one pipelined ZCOUNT).
SessionInspection RedisStore::do_inspect_session(const std::string& s) {
  constexpr std::string_view op = "inspect_session";
  return guard(op, [&] {
    auto lease = core_->acquire(op);
    auto out = scripts::InspectSession::decode(
        op, s, scripts::run(*lease, op, k(), scripts::InspectSession{s, clock().now_ms(), true}));
    const std::string head_prefix = k().snap(s, "");
    const std::string pattern = glob_escape(head_prefix) + "*";
    std::set<std::string> reducers;
    std::string cursor = "0";
    do {
      ScanStep next = scan(*lease, op, cursor, pattern, a2::detail::kSweepScanCount);
      for (const auto& key : next.keys) {
        std::string reducer = key.substr(head_prefix.size());
        if (!reducer.empty() && reducer.find(':') == std::string::npos)
          reducers.insert(std::move(reducer));
      }
      cursor = std::move(next.cursor);
    } while (cursor != "0");
    if (reducers.empty()) return out;
    const std::vector<std::string> names(reducers.begin(), reducers.end());
    std::vector<Argv> gets;
    for (const auto& r : names) gets.push_back({"GET", k().snap(s, r)});
    const auto heads = lease->pipeline(op, gets);
    std::vector<SnapshotState> found;
    std::vector<Argv> zcounts;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (heads[i].is_error()) fail(op, heads[i].str);
      if (heads[i].is_nil()) continue;
      const auto index = checkpoint_index(op, text(op, heads[i]));
      if (!index || *index < out.summary.clear_index) continue;  // Of a cleared lifetime.
      found.push_back({names[i], *index, 0});
      zcounts.push_back({"ZCOUNT", k().snap_history(s, names[i]),
                         std::to_string(out.summary.clear_index), "(" + std::to_string(*index)});
    }
    if (found.empty()) return out;
    const auto counts = lease->pipeline(op, zcounts);
    for (std::size_t i = 0; i < found.size(); ++i) {
      if (counts[i].is_error()) fail(op, counts[i].str);
      found[i].history = number(op, counts[i]);
    }
    out.snapshots = std::move(found);
    return out;
  });
}

}  // namespace a2::redis::detail
