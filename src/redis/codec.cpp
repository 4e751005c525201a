// SPDX-License-Identifier: MIT
#include "redis/codec.hpp"

#include <charconv>
#include <cmath>
#include <type_traits>
#include <utility>

#include "a2/detail/json_text.hpp"
#include "redis/errors.hpp"

namespace a2::redis::detail {

void unexpected(std::string_view op, const std::string& what) {
  fail(op, "unexpected reply: " + what);
}

std::string text(std::string_view op, const Reply& r) {
  switch (r.type) {
    case Reply::Type::string:
    case Reply::Type::status:
      return r.str;
    case Reply::Type::integer:
      return std::to_string(r.integer);
    case Reply::Type::nil:
      return {};
    default:
      unexpected(op, "expected a string");
  }
}

std::optional<std::int64_t> parse_integer(std::string_view s) {
  if (s.empty() || s.size() > 40) return std::nullopt;
  const bool negative = s[0] == '-';
  const std::size_t i = negative ? 1 : 0;
  if (i < s.size() && s.size() - i <= 16) {  // Digits only: one pass.
    std::int64_t v = 0;
    std::size_t k = i;
    for (; k < s.size() && s[k] >= '0' && s[k] <= '9'; ++k) v = v * 10 + (s[k] - '0');
    if (k == s.size()) {
      if (v > kMaxSafeInteger) return std::nullopt;
      return negative ? -v : v;
    }
  }
  // Lua's tostring of a large number ("9.007199254741e+15"): accept only integral values.
  auto d = parse_double(s);
  if (!d || std::floor(*d) != *d || std::fabs(*d) > static_cast<double>(kMaxSafeInteger))
    return std::nullopt;
  return static_cast<std::int64_t>(*d);
}

std::optional<double> parse_double(std::string_view s) {
  // The JSON number grammar (Lua's tostring and JSON.stringify both write within it):
  // -?digits(.digits)?([eE][+-]?digits)?
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t from = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i > from;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (!digits()) return std::nullopt;
  if (i < s.size() && s[i] == '.' && (++i, !digits())) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  double d = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(d)) return std::nullopt;
  return d;
}

std::optional<std::int64_t> parse_number(std::string_view s) {
  if (auto exact = parse_integer(s)) return exact;
  auto d = parse_double(s);
  if (!d) return std::nullopt;
  const double t = std::trunc(*d);
  if (std::fabs(t) > static_cast<double>(kMaxSafeInteger)) return std::nullopt;
  return static_cast<std::int64_t>(t);
}

std::int64_t number(std::string_view op, const Reply& r) {
  if (r.type == Reply::Type::integer) return r.integer;
  if (r.is_string()) {
    if (auto v = parse_number(r.str)) return *v;
    unexpected(op, "'" + r.str.substr(0, 40) + "' is not a number");
  }
  unexpected(op, "expected an integer");
}

std::optional<std::int64_t> optional_number(std::string_view op, const Reply& r) {
  if (r.is_nil()) return std::nullopt;
  return number(op, r);
}

std::int64_t entry_index(std::string_view op, const std::string& entry_id) {
  auto dash = entry_id.find('-');
  auto v = parse_integer(std::string_view(entry_id).substr(0, dash));
  if (!v || *v < 1) unexpected(op, "bad stream entry id '" + entry_id + "'");
  return *v;
}

namespace {

// The fields of a stream entry, pointing into the reply: const when the reply is only read,
// mutable when the caller gives the reply up (its strings are then moved, not copied).
template <class Str>
struct EntryFields {
  std::int64_t index = 0;
  Str* id = nullptr;
  Str* type = nullptr;
  Str* payload = nullptr;
  Str* created_at = nullptr;
  Str* cause = nullptr;
  Str* lane = nullptr;
};

template <class R>  // Reply or const Reply.
auto fields_of(std::string_view op, R& entry) {
  using Str = std::conditional_t<std::is_const_v<R>, const std::string, std::string>;
  if (!entry.is_array() || entry.size() != 2 || !entry.elements[0].is_string() ||
      !entry.elements[1].is_array())
    unexpected(op, "bad stream entry");
  EntryFields<Str> f;
  f.index = entry_index(op, entry.elements[0].str);
  auto& values = entry.elements[1].elements;
  for (std::size_t i = 0; i + 1 < values.size(); i += 2) {
    const std::string& name = values[i].str;
    Str* value = &values[i + 1].str;
    if (name == "id")
      f.id = value;
    else if (name == "type")
      f.type = value;
    else if (name == "payload")
      f.payload = value;
    else if (name == "created_at")
      f.created_at = value;
    else if (name == "cause")
      f.cause = value;
    else if (name == "lane")
      f.lane = value;
  }
  if (!f.id || !f.type || !f.payload || !f.created_at)
    unexpected(op, "stream entry " + entry.elements[0].str + " lacks a field");
  return f;
}

// Moves a string out of a reply the caller gave up; copies one it only reads.
void take(std::string& to, std::string& from) { to = std::move(from); }
void take(std::string& to, const std::string& from) { to = from; }

template <class Str>
std::int64_t created_at(std::string_view op, const EntryFields<Str>& f) {
  auto created = parse_number(*f.created_at);
  if (!created)
    unexpected(op, "the created_at of event " + std::to_string(f.index) + " is invalid");
  return *created;
}

template <class Str>
void fill_event(std::string_view op, const std::string& session_id, const EntryFields<Str>& f,
                Event& e) {
  e.session_id = session_id;
  e.index = f.index;
  try {
    e.payload = a2::detail::parse_stored_json(*f.payload);  // Straight from the reply's bytes.
  } catch (const Json::exception&) {
    unexpected(op, "the payload of event " + std::to_string(f.index) + " is not JSON");
  }
  e.created_at = created_at(op, f);
  take(e.id, *f.id);
  take(e.type, *f.type);
}

template <class Str>
void fill_stored_fields(std::string_view op, const std::string& session_id,
                        const EntryFields<Str>& f, StoredEvent& e) {
  fill_event(op, session_id, f, e);
  if (f.cause) e.cause = parse_cause(op, *f.cause);
  if (f.lane && !f.lane->empty()) take(e.lane.emplace(), *f.lane);
}

template <class R>
void fill_stored(std::string_view op, const std::string& session_id, R& entry, StoredEvent& e) {
  fill_stored_fields(op, session_id, fields_of(op, entry), e);
}

}  // namespace

Event to_event(std::string_view op, const std::string& session_id, Reply&& entry) {
  Event e;
  fill_event(op, session_id, fields_of(op, entry), e);
  return e;
}

StoredEvent to_stored_event(std::string_view op, const std::string& session_id,
                            const Reply& entry) {
  StoredEvent e;
  fill_stored(op, session_id, entry, e);
  return e;
}

StoredEvent stored_event_of_values(std::string_view op, const std::string& session_id,
                                   std::span<const Reply, kEntryValues> values) {
  for (const Reply& v : values)
    if (!v.is_string()) unexpected(op, "bad stream entry values");
  EntryFields<const std::string> f;
  f.index = entry_index(op, values[0].str);
  f.id = &values[1].str;
  f.type = &values[2].str;
  f.payload = &values[3].str;
  f.created_at = &values[4].str;
  f.cause = &values[5].str;
  f.lane = &values[6].str;
  StoredEvent e;
  fill_stored_fields(op, session_id, f, e);
  return e;
}

void fill_stored_event(std::string_view op, const std::string& session_id, Reply&& entry,
                       StoredEvent& e) {
  fill_stored(op, session_id, entry, e);
}

SerializedEvent to_serialized_event(std::string_view op, const std::string& session_id,
                                    Reply&& entry) {
  auto f = fields_of(op, entry);
  SerializedEvent e;
  e.index = f.index;
  e.session_id = session_id;
  e.created_at = created_at(op, f);
  take(e.id, *f.id);
  take(e.type, *f.type);
  take(e.payload_json, *f.payload);
  return e;
}

std::optional<EventCause> parse_cause(std::string_view op, const std::string& raw) {
  if (raw.empty()) return std::nullopt;
  try {
    auto j = a2::detail::parse_stored_json(raw);
    auto get = [&](const char* name) -> std::int64_t {
      const auto& v = j.at(name);
      if (v.is_number_integer()) return v.get<std::int64_t>();
      // A fractional or exponent-form number (JSON.stringify may write either): truncated.
      auto n = parse_number(a2::detail::json_text(v));
      if (!n) throw std::runtime_error("not a number");
      return *n;
    };
    return EventCause{get("index"), get("attempt")};
  } catch (const std::exception&) {
    unexpected(op, "bad cause '" + raw.substr(0, 80) + "'");
  }
}

std::string cause_json(const EventCause& c) {
  return "{\"index\":" + std::to_string(c.index) + ",\"attempt\":" + std::to_string(c.attempt) +
         "}";
}

void apply_columns(std::string_view op, StoredEvent& e,
                   const std::array<const Reply*, kMetaSuffixes.size()>& c) {
  auto opt = [&](int i) -> std::optional<std::int64_t> {
    return c[i] ? optional_number(op, *c[i]) : std::nullopt;
  };
  auto str = [&](int i) -> std::optional<std::string> {
    if (!c[i] || c[i]->is_nil()) return std::nullopt;
    return text(op, *c[i]);
  };
  e.processed_at = opt(0);
  e.processed_by_attempt = opt(1);
  if (auto ri = str(2)) {
    try {
      auto j = a2::detail::parse_stored_json(*ri);
      std::vector<std::string> ids;
      if (j.is_array())
        for (const auto& v : j) ids.push_back(v.get<std::string>());
      else if (!(j.is_object() && j.empty()))  // cjson writes an empty table as {}.
        throw std::runtime_error("not an array");
      e.returned_event_ids = std::move(ids);
    } catch (const std::exception&) {
      unexpected(op, "bad returned event ids of event " + std::to_string(e.index));
    }
  } else {
    e.returned_event_ids.reset();
  }
  e.claim_holder = str(3);
  e.claim_expires_at = opt(4);
  e.failed_at = opt(5);
  e.first_claimed_at = opt(6);
  e.last_claimed_at = opt(7);
  e.last_failed_at = opt(8);
  e.last_failed_attempt = opt(9);
  e.attempt_count = opt(10).value_or(0);
  e.failure_count = opt(11).value_or(0);
  e.last_error = str(12);
  e.available_at = opt(13);
}

std::vector<StoredEvent> entry_rows(std::string_view op, const std::string& session_id,
                                    const Reply& r, std::size_t from) {
  if (!r.is_array()) unexpected(op, "expected an array");
  std::vector<StoredEvent> out;
  if (r.size() > from) out.reserve((r.size() - from) / 2);
  for (std::size_t i = from; i + 1 < r.size(); i += 2) {
    StoredEvent& e = out.emplace_back();
    fill_stored(op, session_id, r.elements[i], e);
    const Reply& columns = r.elements[i + 1];
    if (!columns.is_array()) unexpected(op, "bad columns");
    static const Reply kNil;
    std::array<const Reply*, kMetaSuffixes.size()> c{};
    for (std::size_t at = 0; at < c.size(); ++at)
      c[at] = at < columns.size() ? &columns.elements[at] : &kNil;
    apply_columns(op, e, c);
  }
  return out;
}

}  // namespace a2::redis::detail
