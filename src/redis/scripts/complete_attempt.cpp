// SPDX-License-Identifier: MIT
#include "redis/scripts/complete_attempt.hpp"

#include <algorithm>

#include "a2/detail/json_text.hpp"
#include "redis/codec.hpp"
#include "redis/errors.hpp"

namespace a2::redis::detail::scripts {

namespace {

// A child's id key and its six ARGV values (both scripts).
void encode_child(Call& c, const Keys& k, std::int64_t now, const ChildEvent& child) {
  c.keys.push_written([&](std::string& out) { k.put_id(out, *child.id); });
  c.argv.push_back(*child.id);
  c.argv.push_back(child.type);
  c.argv.push_written([&](std::string& out) { a2::detail::append_json_text(out, child.payload); });
  c.argv.push_back(child.lane ? std::string_view(*child.lane) : std::string_view());
  c.argv.push_back(flag(child.settled));
  c.argv.push_back(delay(now, child.available_at_ms));
}

}  // namespace

Call CompleteAttempt::encode(const Keys& k) const {
  Call c;
  push_log_and_queue_keys(c.keys, k, session);
  c.keys.push_back(k.pins(session, index));
  c.keys.push_joined(k.pin_counts<KeyPieces>(session));
  c.keys.push_joined(k.meta_split<KeyPieces>(session));
  c.argv = {session, decimal(now), decimal(index), decimal(attempt),
            decimal(static_cast<std::int64_t>(children.size()))};
  for (const auto& child : children) encode_child(c, k, now, child);
  c.keys.push_back(k.work());
  c.argv.push_joined(k.notify<KeyPieces>(session));
  encode_next_claim(c.argv, next);
  return c;
}

CompleteAttempt::Result CompleteAttempt::verdict(std::string_view op, const std::string& session_id,
                                                 const Reply& r) {
  if (!r.is_array() || r.size() == 0) unexpected(op, "empty script reply");
  const std::string verdict = text(op, r[0]);
  Result result;
  if (verdict == "superseded") {
    result.verdict = Verdict::superseded;
  } else if (verdict == "missing") {
    result.verdict = Verdict::missing;
  } else if (verdict == "partial") {
    result.verdict = Verdict::partial;
    if (r.size() > 1) result.owned_id = text(op, r[1]);
  } else if (verdict == "ok") {
    result.verdict = Verdict::ok;
    result.first_index = after_write(op, [&] {
      if (r.size() < 2) unexpected(op, "short 'ok' reply");
      return number(op, r[1]);
    });
  } else if (verdict == "rows") {
    // { 'rows', (streamEntry, columns) x n }: a replay. Like every row but a claim's, they
    // carry no clear_index.
    result.verdict = Verdict::replay;
    result.rows = entry_rows(op, session_id, r, 1);
  } else {
    unexpected(op, "unknown verdict '" + verdict + "'");
  }
  return result;
}

CompleteAttempt::Result CompleteAttempt::decode(std::string_view op, const std::string& session_id,
                                                const Reply& r) {
  // With claim_next: { C, claimReply } (the claim ran, so the store changed).
  if (r.is_array() && r.size() > 0 && r[0].is_array()) {
    return after_write(op, [&] {
      if (r.size() != 2)
        unexpected(op, "claim_next reply of " + std::to_string(r.size()) + " elements");
      Result result = verdict(op, session_id, r[0]);
      result.next = next_claim_result(op, session_id, r[1]);
      return result;
    });
  }
  return verdict(op, session_id, r);
}

Call CompleteAttempts::encode(const Keys& k) const {
  Call c;
  c.keys = {k.log(session),   k.count(session),      k.meta(session),      k.pending(session),
            k.ready(session), k.pin_counts(session), k.meta_split(session)};
  std::size_t children = 0;
  for (const auto& completion : completions) {
    c.keys.push_back(k.pins(session, completion.index));
    children += completion.events.size();
  }
  c.argv = {std::string(session), decimal(now),
            decimal(static_cast<std::int64_t>(completions.size())),
            decimal(static_cast<std::int64_t>(children))};
  for (const auto& completion : completions) {
    c.argv.push_back(decimal(completion.index));
    c.argv.push_back(decimal(completion.attempt));
    c.argv.push_back(decimal(static_cast<std::int64_t>(completion.events.size())));
    for (const auto& child : completion.events) encode_child(c, k, now, child);
  }
  c.keys.push_back(k.work());
  c.argv.push_back(k.notify(session));
  encode_next_claim(c.argv, next);
  return c;
}

CompleteAttempts::Result CompleteAttempts::decode(std::string_view op,
                                                  const std::string& session_id, const Reply& r) {
  if (!r.is_array() || r.size() == 0) unexpected(op, "empty script reply");
  const std::string verdict = text(op, r[0]);
  Result result;
  if (verdict == "missing" || verdict == "partial") {
    // Nothing changed: the checks run before the first write.
    result.verdict = verdict == "missing" ? Verdict::missing : Verdict::partial;
    if (r.size() < 2) unexpected(op, "short '" + verdict + "' reply");
    const auto position = number(op, r[1]);
    if (position < 1) unexpected(op, "completion position " + std::to_string(position));
    result.failed = static_cast<std::size_t>(position - 1);
    if (r.size() > 2) result.owned_id = text(op, r[2]);
    return result;
  }
  if (verdict != "done") unexpected(op, "unknown verdict '" + verdict + "'");
  return after_write(op, [&] {
    if (r.size() < 2 || !r[1].is_array()) unexpected(op, "short 'done' reply");
    result.verdict = Verdict::done;
    result.results.reserve(r[1].size());
    for (const auto& one : r[1].elements) {
      auto decoded = CompleteAttempt::verdict(op, session_id, one);
      if (decoded.verdict == CompleteAttempt::Verdict::missing ||
          decoded.verdict == CompleteAttempt::Verdict::partial)
        unexpected(op, "an error verdict among the applied completions");
      result.results.push_back(std::move(decoded));
    }
    if (r.size() > 2 && !r[2].is_nil()) result.next = next_claim_result(op, session_id, r[2]);
    return result;
  });
}

}  // namespace a2::redis::detail::scripts
