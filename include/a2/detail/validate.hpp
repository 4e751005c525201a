// SPDX-License-Identifier: MIT
#pragma once

// The one validation layer shared by every backend. Store's public methods call these before
// any I/O, so the same bad input gets the same InvalidArgument on every backend and changes
// nothing.

#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "a2/errors.hpp"
#include "a2/options.hpp"
#include "a2/types.hpp"

namespace a2::detail {

[[noreturn]] inline void invalid(std::string_view op, const std::string& what) {
  throw InvalidArgument("a2 " + std::string(op) + ": " + what);
}

// Quotes a user string for an error message, cut to a readable length.
inline std::string quote_arg(std::string_view s) {
  constexpr std::size_t kShown = 64;
  std::string out = "'";
  out.append(s.substr(0, kShown));
  if (s.size() > kShown) out += "...";
  out += "'";
  return out;
}

inline bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t len;
    std::uint32_t cp;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
    else return false;
    if (i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

// Free text (event ids, types, lanes, holders, error texts): valid UTF-8 without NUL bytes
// (Postgres text cannot hold NUL), within `max` bytes, and non-empty unless allowed.
inline void check_text(std::string_view op, std::string_view what, std::string_view s,
                       std::size_t max, bool allow_empty = false) {
  if (s.empty() && !allow_empty) invalid(op, std::string(what) + " must not be empty");
  if (s.size() > max)
    invalid(op, std::string(what) + " is " + std::to_string(s.size()) + " bytes; the limit is " +
                    std::to_string(max));
  if (s.find('\0') != std::string_view::npos)
    invalid(op, std::string(what) + " " + quote_arg(s) + " contains a NUL byte");
  if (!valid_utf8(s)) invalid(op, std::string(what) + " " + quote_arg(s) + " is not valid UTF-8");
}

// Names that end a session's Redis keys ("<prefix>:<session>:<word>..."). A session id
// segment after the first may not be one of them, so that no session id can spell another
// session's key.
inline bool reserved_key_word(std::string_view w) {
  static constexpr std::string_view kWords[] = {
      "log",   "count",   "meta",          "meta-split",          "pending",
      "ready", "snap",    "snap-history",  "snapshot-pins",       "snapshot-pin-counts",
      "clear", "cleared", "snap-reducers", "presence",            "notify"};
  for (auto k : kWords)
    if (w == k) return true;
  return false;
}

inline bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '-' || c == '_' || c == '.' || c == '~' || c == '@' || c == '+' || c == '=' ||
         c == '/';
}

// Session ids: 1..kMaxSessionIdBytes of [A-Za-z0-9-_.~@+=/] in segments joined by ':'; no
// empty segment, and no segment after the first may be a reserved key word. This keeps every
// session's Redis keys, notify channel and presence key disjoint from every other session's.
inline void check_session_id(std::string_view op, std::string_view s) {
  if (s.empty()) invalid(op, "session id must not be empty");
  if (s.size() > kMaxSessionIdBytes)
    invalid(op, "session id is " + std::to_string(s.size()) + " bytes; the limit is " +
                    std::to_string(kMaxSessionIdBytes));
  std::size_t start = 0;
  bool first = true;
  while (true) {
    auto end = s.find(':', start);
    auto seg = s.substr(start, end == std::string_view::npos ? s.size() - start : end - start);
    if (seg.empty()) invalid(op, "session id " + quote_arg(s) + " has an empty ':' segment");
    for (char c : seg)
      if (!name_char(c))
        invalid(op, "session id " + quote_arg(s) +
                        " may only contain letters, digits, ':' and -_.~@+=/");
    if (!first && reserved_key_word(seg))
      invalid(op, "session id " + quote_arg(s) + " has the reserved segment " + quote_arg(seg));
    first = false;
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
}

// Reducer names: 1..kMaxReducerBytes of [A-Za-z0-9-_.~@+=/] (no ':', so a reducer's keys
// cannot reach another session's).
inline void check_reducer(std::string_view op, std::string_view r) {
  if (r.empty()) invalid(op, "reducer name must not be empty");
  if (r.size() > kMaxReducerBytes)
    invalid(op, "reducer name is " + std::to_string(r.size()) + " bytes; the limit is " +
                    std::to_string(kMaxReducerBytes));
  for (char c : r)
    if (!name_char(c))
      invalid(op, "reducer name " + quote_arg(r) + " may only contain letters, digits and -_.~@+=/");
}

inline void check_integer(std::string_view op, std::string_view what, std::int64_t v,
                          std::int64_t min = -kMaxSafeInteger) {
  if (v < min)
    invalid(op, std::string(what) + " is " + std::to_string(v) + "; it must be >= " +
                    std::to_string(min));
  if (v > kMaxSafeInteger)
    invalid(op, std::string(what) + " is " + std::to_string(v) + "; it must be <= 2^53-1");
}

inline void check_json_numbers(std::string_view op, std::string_view what, const Json& j) {
  switch (j.type()) {
    case Json::value_t::number_float:
      if (!std::isfinite(j.get<double>()))
        invalid(op, std::string(what) + " holds NaN or infinity, which JSON cannot carry");
      break;
    case Json::value_t::object:
      for (const auto& [k, v] : j.items()) check_json_numbers(op, what, v);
      break;
    case Json::value_t::array:
      for (const auto& v : j) check_json_numbers(op, what, v);
      break;
    case Json::value_t::binary:
    case Json::value_t::discarded:
      invalid(op, std::string(what) + " is not a JSON value");
    default:
      break;
  }
}

// A payload or state: a JSON value (no NaN/infinity, no binary), valid UTF-8 strings, at most
// kMaxPayloadBytes serialized.
inline void check_json(std::string_view op, std::string_view what, const Json& j) {
  check_json_numbers(op, what, j);
  std::string text;
  try {
    text = j.dump();
  } catch (const Json::exception&) {
    invalid(op, std::string(what) + " holds a string that is not valid UTF-8");
  }
  if (text.size() > kMaxPayloadBytes)
    invalid(op, std::string(what) + " is " + std::to_string(text.size()) +
                    " bytes of JSON; the limit is " + std::to_string(kMaxPayloadBytes));
}

inline void check_lease(std::string_view op, const std::optional<std::int64_t>& ttl_ms,
                        const std::optional<std::int64_t>& expires_at_ms) {
  if (!ttl_ms && !expires_at_ms) invalid(op, "give ttl_ms or expires_at_ms");
  if (ttl_ms) check_integer(op, "ttl_ms", *ttl_ms, 1);
  if (expires_at_ms) check_integer(op, "expires_at_ms", *expires_at_ms, 0);
}

inline void check_batch_size(std::string_view op, std::size_t n) {
  if (n > kMaxBatchEvents)
    invalid(op, "a batch of " + std::to_string(n) + " events exceeds the limit of " +
                    std::to_string(kMaxBatchEvents));
}

inline void check_list_size(std::string_view op, std::string_view what, std::size_t n) {
  if (n > kMaxListedIndexes)
    invalid(op, std::string(what) + " lists " + std::to_string(n) + " entries; the limit is " +
                    std::to_string(kMaxListedIndexes));
}

// Checks one event of a batch; `seen` collects the supplied ids to reject duplicates (Q5).
template <class E>
void check_event(std::string_view op, const E& e, std::set<std::string>& seen) {
  if (e.id) {
    check_text(op, "event id", *e.id, kMaxEventIdBytes);
    if (!seen.insert(*e.id).second) invalid(op, "duplicate event id " + quote_arg(*e.id) + " in batch");
  }
  check_text(op, "event type", e.type, kMaxEventTypeBytes);
  if (e.lane) check_text(op, "lane", *e.lane, kMaxLaneBytes, /*allow_empty=*/true);
  check_json(op, "payload", e.payload);
}

}  // namespace a2::detail
