// SPDX-License-Identifier: MIT
#include "redis/scripts/claim_available.hpp"

#include "redis/codec.hpp"
#include "redis/errors.hpp"

namespace a2::redis::detail {

ClaimResult claim_result(std::string_view op, const std::string& session_id, const Reply& r) {
  if (!r.is_array() || r.size() == 0) unexpected(op, "empty script reply");
  const std::string verdict = text(op, r[0]);
  ClaimResult result;
  if (verdict == "settled") {
    result.verdict = ClaimVerdict::settled;
    return result;
  }
  if (verdict == "busy" && r.size() >= 2) {
    result.verdict = ClaimVerdict::busy;
    result.retry_at = number(op, r[1]);
    return result;
  }
  if (verdict != "claimed" || r.size() < 2) unexpected(op, "unknown verdict '" + verdict + "'");
  // { 'claimed', count, (11 columns) x count, boundary }
  constexpr std::size_t kColumns = 11;
  const auto count = number(op, r[1]);
  if (count < 1 || r.size() < 2 + static_cast<std::size_t>(count) * kColumns)
    unexpected(op, "short 'claimed' reply");
  const auto n = static_cast<std::size_t>(count);
  std::int64_t clear = 0;
  if (r.size() > 2 + n * kColumns) clear = number(op, r[2 + n * kColumns]);
  result.verdict = ClaimVerdict::claimed;
  result.events.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t o = 2 + i * kColumns;
    StoredEvent e = to_stored_event(op, session_id, r[o + 9]);
    e.attempt_count = number(op, r[o]);
    e.failure_count = r[o + 1].is_nil() ? 0 : number(op, r[o + 1]);
    if (!r[o + 2].is_nil()) e.last_error = text(op, r[o + 2]);
    e.first_claimed_at = optional_number(op, r[o + 3]);
    e.last_claimed_at = optional_number(op, r[o + 4]);
    e.last_failed_at = optional_number(op, r[o + 5]);
    e.last_failed_attempt = optional_number(op, r[o + 6]);
    e.claim_holder = text(op, r[o + 7]);
    e.claim_expires_at = number(op, r[o + 8]);
    e.available_at = optional_number(op, r[o + 10]);  // A delay that has passed, if any.
    if (clear > 0) e.clear_index = clear;
    result.events.push_back(std::move(e));
  }
  return result;
}

namespace scripts {

Call ClaimAvailable::encode(const Keys& k) const {
  Call c;
  push_log_and_queue_keys(c.keys, k, session);
  c.keys.push_joined(k.meta_split<KeyPieces>(session));
  c.keys.push_back(k.work());
  c.argv = {holder, decimal(now), decimal(expires_at),
            max_events ? decimal(*max_events) : std::string(),
            decimal(static_cast<std::int64_t>(exclude.size()))};
  for (auto i : exclude) c.argv.push_back(decimal(i));
  return c;
}

void encode_next_claim(Args& argv, const std::optional<NextClaim>& next) {
  if (!next) {
    for (int i = 0; i < 3; ++i) argv.push_back({});
    return;
  }
  argv.push_back(next->holder);
  argv.push_back(decimal(next->expires_at));
  argv.push_back(decimal(next->max_events));
}

ClaimResult next_claim_result(std::string_view op, const std::string& session_id, const Reply& r) {
  return after_write(op, [&] {
    if (r.is_array() && r.size() >= 2 && text(op, r[0]) == "missing")
      fail(op, "the stream entry of ready event " + text(op, r[1]) + " is missing in session '" +
                   session_id + "' (the completion was written, the claim was not)");
    return claim_result(op, session_id, r);
  });
}

ClaimResult ClaimAvailable::decode(std::string_view op, const std::string& session_id,
                                   const Reply& r) {
  if (r.is_array() && r.size() >= 2 && text(op, r[0]) == "missing")
    fail(op, "the stream entry of ready event " + text(op, r[1]) + " is missing in session '" +
                 session_id + "'");
  return after_write(op, [&] { return claim_result(op, session_id, r); });
}

}  // namespace scripts
}  // namespace a2::redis::detail
