// SPDX-License-Identifier: MIT
#include "redis/scripts/append.hpp"

#include "a2/detail/json_text.hpp"
#include "redis/codec.hpp"
#include "redis/errors.hpp"

namespace a2::redis::detail::scripts {

Call Append::encode(const Keys& k) const {
  Call c;
  // Every value written in place (Args): keys from their pieces, the payload's JSON text and the
  // id keys straight into the buffers, so an append makes no string per argument.
  push_log_and_queue_keys(c.keys, k, session);
  c.keys.push_joined(k.meta_split<KeyPieces>(session));
  c.argv.push_back(session);
  c.argv.push_back(decimal(now));
  c.argv.push_back(decimal(static_cast<std::int64_t>(events.size())));
  for (const auto& e : events) {
    c.keys.push_written([&](std::string& out) { k.put_id(out, *e.id); });
    c.argv.push_back(*e.id);
    c.argv.push_back(e.type);
    c.argv.push_written([&](std::string& out) { a2::detail::append_json_text(out, e.payload); });
    c.argv.push_back(e.cause ? cause_json(*e.cause) : std::string());
    c.argv.push_back(e.lane ? std::string_view(*e.lane) : std::string_view());
    c.argv.push_back(flag(e.settled));
    c.argv.push_back(delay(now, e.available_at_ms));
  }
  c.keys.push_back(k.work());
  c.argv.push_joined(k.notify<KeyPieces>(session));
  c.argv.push_back(origin_index ? decimal(*origin_index) : std::string());
  return c;
}

bool AppendOne::one_event(std::int64_t now, std::span<const NewEvent> events,
                          const std::optional<std::int64_t>& origin_index) {
  if (events.size() != 1 || origin_index) return false;
  const NewEvent& e = events.front();
  // The arguments append.lua's layout would carry empty: cause, lane ('' is no lane), settled,
  // available_at (a time not after now is none: delay()).
  return !e.cause && (!e.lane || e.lane->empty()) && !e.settled &&
         delay(now, e.available_at_ms).empty();
}

Call AppendOne::encode(const Keys& k) const {
  Call c;
  push_log_and_queue_keys(c.keys, k, session);
  c.keys.push_joined(k.meta_split<KeyPieces>(session));
  c.keys.push_written([&](std::string& out) { k.put_id(out, *event.id); });
  c.keys.push_back(k.work());
  c.argv.push_back(session);
  c.argv.push_back(decimal(now));
  c.argv.push_back(*event.id);
  c.argv.push_back(event.type);
  c.argv.push_written([&](std::string& out) { a2::detail::append_json_text(out, event.payload); });
  c.argv.push_joined(k.notify<KeyPieces>(session));
  return c;
}

Append::Result Append::decode(std::string_view op, const std::string& session_id, const Reply& r) {
  if (!r.is_array() || r.size() == 0) unexpected(op, "empty script reply");
  const std::string verdict = text(op, r[0]);
  auto at = [&](std::size_t i) -> const Reply& {
    if (i >= r.size()) unexpected(op, "short '" + verdict + "' reply");
    return r[i];
  };
  Result result;
  if (verdict == "empty") {
    result.verdict = Verdict::empty;
    result.has_pending = text(op, at(1)) == "1";
  } else if (verdict == "ok") {
    result.verdict = Verdict::ok;
    after_write(op, [&] {
      result.first_index = number(op, at(1));
      result.has_pending = text(op, at(2)) == "1";
    });
  } else if (verdict == "rows") {
    result.verdict = Verdict::replay;
    result.has_pending = text(op, at(1)) == "1";
    result.rows = entry_rows(op, session_id, r, 2);
  } else if (verdict == "partial") {
    result.verdict = Verdict::partial;
    result.stored_count = number(op, at(1));
  } else if (verdict == "foreign") {
    result.verdict = Verdict::foreign;
    result.id = text(op, at(1));
  } else if (verdict == "no_parent" || verdict == "superseded" || verdict == "cleared") {
    result.verdict = verdict == "no_parent"    ? Verdict::no_parent
                     : verdict == "superseded" ? Verdict::superseded
                                               : Verdict::cleared;
    result.index = number(op, at(1));
  } else {
    unexpected(op, "unknown verdict '" + verdict + "'");
  }
  return result;
}

}  // namespace a2::redis::detail::scripts
