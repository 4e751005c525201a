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
#include <utility>
#include <vector>

#include "a2/detail/checked_clock.hpp"
#include "a2/detail/json_text.hpp"
#include "a2/detail/redis_key_words.hpp"
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

// The clear marker type of a store's options, checked at open (`op` is "<backend> open"): a
// valid event type.
inline void check_clear_event_type(std::string_view op, std::string_view type) {
  check_text(op, "clear_event_type", type, kMaxEventTypeBytes);
}

// Names that end a session's Redis keys ("<prefix>:<session>:<word>...",
// redis_key_words.hpp). A session id segment after the first may not be one of them, so that no
// session id can spell another session's key.
inline bool reserved_key_word(std::string_view w) {
  for (auto k : redis_key_words::kAll)
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

// list_sessions cursors (docs/semantics.md#list_sessions): "" (from the start) or the last
// session id of the previous page (memory, Postgres) ...
inline void check_session_cursor(std::string_view op, std::string_view cursor) {
  if (!cursor.empty()) check_session_id(op, cursor);
}
// ... or a Redis cursor: decimal digits (a SCAN cursor, or a position inside one SCAN step,
// src/redis/inspect.cpp), at most 1024 of them; the backend checks the rest of its form.
inline void check_scan_cursor(std::string_view op, std::string_view cursor) {
  bool ok = cursor.size() <= 1024;
  for (char c : cursor) ok = ok && c >= '0' && c <= '9';
  if (!ok) invalid(op, "cursor " + quote_arg(cursor) + " is not a cursor this store returned");
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

// The length of a JSON number's text in plain decimal notation, as Postgres numeric prints it
// from jsonb: no exponent, every digit the mantissa and exponent imply ("1e308" is 309 bytes,
// "1.5e-3" is "0.0015", 6 bytes). `text` is a JSON number (RFC 8259 grammar).
inline std::size_t plain_decimal_length(std::string_view text) {
  std::size_t i = 0;
  std::size_t sign = 0;
  if (i < text.size() && text[i] == '-') sign = 1, ++i;
  std::string_view int_digits, frac_digits;
  auto digits_from = [&](std::size_t from) {
    std::size_t to = from;
    while (to < text.size() && text[to] >= '0' && text[to] <= '9') ++to;
    return to;
  };
  std::size_t end = digits_from(i);
  int_digits = text.substr(i, end - i);
  i = end;
  if (i < text.size() && text[i] == '.') {
    end = digits_from(i + 1);
    frac_digits = text.substr(i + 1, end - i - 1);
    i = end;
  }
  long long exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool negative = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i)
      if (exponent < 1'000'000'000) exponent = exponent * 10 + (text[i] - '0');
    if (negative) exponent = -exponent;
  }
  // The significant digits, leading zeros dropped, and where the decimal point falls in them.
  long long point = static_cast<long long>(int_digits.size()) + exponent;
  std::size_t leading = 0;
  const std::size_t all = int_digits.size() + frac_digits.size();
  auto digit = [&](std::size_t k) {
    return k < int_digits.size() ? int_digits[k] : frac_digits[k - int_digits.size()];
  };
  while (leading < all && digit(leading) == '0') ++leading;
  point -= static_cast<long long>(leading);
  long long scale = static_cast<long long>(frac_digits.size()) - exponent;
  if (scale < 0) scale = 0;
  if (leading == all) sign = 0;  // Zero: numeric has no negative zero.
  long long integer_part = (leading == all || point <= 0) ? 1 : point;
  return sign + static_cast<std::size_t>(integer_part) +
         (scale > 0 ? 1 + static_cast<std::size_t>(scale) : 0);
}

// One string or object key of a JSON value: valid UTF-8 and no U+0000 (Postgres jsonb cannot
// store \u0000, so every backend refuses it).
inline void check_json_string(std::string_view op, std::string_view what, std::string_view kind,
                              std::string_view s) {
  if (s.find('\0') != std::string_view::npos)
    invalid(op, std::string(what) + " holds a " + std::string(kind) +
                    " with U+0000, which Postgres jsonb cannot store");
  if (!valid_utf8(s))
    invalid(op, std::string(what) + " holds a " + std::string(kind) + " that is not valid UTF-8");
}

// Walks a JSON value without recursion (a payload nested 30,000 levels deep must not overflow
// the stack) and refuses: nesting deeper than kMaxJsonDepth, NaN and infinity, binary values,
// strings and keys with U+0000 or invalid UTF-8. Returns the bytes that the numbers add when
// printed in plain decimal notation beyond their serialized text (see kMaxPayloadBytes).
// Generic over the JSON type: any nlohmann::basic_json.
template <class J>
std::size_t check_json_tree(std::string_view op, std::string_view what, const J& root) {
  std::size_t expansion = 0;
  std::vector<std::pair<const J*, std::size_t>> stack;  // A value and its depth.
  stack.emplace_back(&root, 0);
  while (!stack.empty()) {
    auto [j, depth] = stack.back();
    stack.pop_back();
    switch (j->type()) {
      case J::value_t::object:
      case J::value_t::array: {
        if (depth + 1 > kMaxJsonDepth)
          invalid(op, std::string(what) + " nests arrays and objects deeper than " +
                          std::to_string(kMaxJsonDepth) + " levels");
        const bool object = j->is_object();
        for (auto it = j->cbegin(); it != j->cend(); ++it) {
          if (object) check_json_string(op, what, "key", it.key());
          stack.emplace_back(&it.value(), depth + 1);
        }
        break;
      }
      case J::value_t::string:
        check_json_string(op, what, "string",
                          j->template get_ref<const typename J::string_t&>());
        break;
      case J::value_t::number_float: {
        if (!std::isfinite(j->template get<double>()))
          invalid(op, std::string(what) + " holds NaN or infinity, which JSON cannot carry");
        std::string text;  // As stored: JSON.stringify's form (json_text.hpp).
        append_number_text(text, j->template get<double>());
        const std::size_t plain = plain_decimal_length(text);
        if (plain > text.size()) expansion += plain - text.size();
        break;
      }
      case J::value_t::binary:
      case J::value_t::discarded:
        invalid(op, std::string(what) + " is not a JSON value");
      default:
        break;
    }
  }
  return expansion;
}

// A payload, checkpoint state or presence state: a JSON value as check_json_tree accepts it, at
// most kMaxPayloadBytes serialized with its numbers counted in plain decimal notation (so that
// Postgres, which prints jsonb numbers that way, never reads back much more than was written).
template <class J>
void check_json(std::string_view op, std::string_view what, const J& j) {
  // First the iterative walk: it bounds the depth before dump() recurses.
  const std::size_t expansion = check_json_tree(op, what, j);
  TextSize text;  // The size of the bytes that are stored, counted without building them.
  try {
    append_json_text(text, j);
  } catch (const typename J::exception&) {
    invalid(op, std::string(what) + " holds a string that is not valid UTF-8");
  }
  const std::size_t size = text.bytes + expansion;
  if (size > kMaxPayloadBytes)
    invalid(op, std::string(what) + " is " + std::to_string(size) +
                    " bytes of JSON (numbers counted in plain decimal notation); the limit is " +
                    std::to_string(kMaxPayloadBytes));
}

inline void check_lease(std::string_view op, const std::optional<std::int64_t>& ttl_ms,
                        const std::optional<std::int64_t>& expires_at_ms) {
  if (!ttl_ms && !expires_at_ms) invalid(op, "give ttl_ms or expires_at_ms");
  if (ttl_ms) check_integer(op, "ttl_ms", *ttl_ms, 1);
  if (expires_at_ms) check_integer(op, "expires_at_ms", *expires_at_ms, 0);
}

// The expiry of a lease that check_lease accepted: expires_at_ms when given, else now + ttl_ms
// (at most 2^53-1: time_after).
inline std::int64_t lease_expires_at(std::int64_t now, const std::optional<std::int64_t>& ttl_ms,
                                     const std::optional<std::int64_t>& expires_at_ms) {
  return expires_at_ms ? *expires_at_ms : time_after(now, ttl_ms.value_or(0));
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

// One event id of a call, supplied by the caller or drawn from the store's IdSource (`drawn`):
// valid text and, unless `seen` is null (a call of one event), not one the call already holds
// (`seen` collects them: Q5). A drawn id that fails is the IdSource's fault (one that repeats
// itself: S245), refused as the caller's would be.
inline void check_event_id(std::string_view op, const std::string& id, std::set<std::string>* seen,
                           bool drawn = false) {
  // Errors name a drawn id as such: the caller did not supply it.
  const std::string_view what = drawn ? "event id (drawn by the store's IdSource)" : "event id";
  check_text(op, what, id, kMaxEventIdBytes);
  if (seen && !seen->insert(id).second)
    invalid(op, "duplicate " + std::string(what) + " " + quote_arg(id) + " in batch");
}

// Checks one event of a batch; `seen` collects the supplied ids to reject duplicates (Q5).
template <class E>
void check_event(std::string_view op, const E& e, std::set<std::string>& seen) {
  if (e.id) check_event_id(op, *e.id, &seen);
  check_text(op, "event type", e.type, kMaxEventTypeBytes);
  if (e.lane) check_text(op, "lane", *e.lane, kMaxLaneBytes, /*allow_empty=*/true);
  if (e.available_at_ms) {
    check_integer(op, "available_at_ms", *e.available_at_ms, 0);
    if (e.settled) invalid(op, "a settled event cannot have available_at_ms (it is not work)");
  }
  check_json(op, "payload", e.payload);
}

// The claims of a renewal or release: at most kMaxListedIndexes, each a valid index and attempt.
template <class Claims>
void check_claims(std::string_view op, const Claims& claims) {
  check_list_size(op, "claims", claims.size());
  for (const auto& c : claims) {
    check_integer(op, "claim index", c.index);
    check_integer(op, "claim attempt", c.attempt);
  }
}

}  // namespace a2::detail
