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
  // { 'claimed', count, now, holder, expiresAt, boundary, (entry, row) x count }: entry the
  // stream entry's id and its six values (kEntryValues elements), or the entry whole (an array,
  // one element: lua/lib/entries.lua put_entry); row nil (no claim column set: attempt 1, no
  // failures, first claimed now) or { attempt, failureCount, lastError, firstClaimedAt,
  // lastFailedAt, lastFailedAttempt, availableAt } (lua/lib/claim.lua).
  constexpr std::size_t kHeader = 6;
  if (verdict != "claimed") unexpected(op, "unknown verdict '" + verdict + "'");
  if (r.size() < kHeader) unexpected(op, "short 'claimed' reply");
  const auto count = number(op, r[1]);
  if (count < 1 || static_cast<std::uint64_t>(count) > (r.size() - kHeader) / 2)
    unexpected(op, "short 'claimed' reply");
  const auto n = static_cast<std::size_t>(count);
  const std::int64_t now = number(op, r[2]);
  const std::string holder = text(op, r[3]);
  const std::int64_t expires_at = number(op, r[4]);
  const std::int64_t clear = number(op, r[5]);
  result.verdict = ClaimVerdict::claimed;
  result.events.reserve(n);
  std::size_t o = kHeader;
  for (std::size_t i = 0; i < n; ++i) {
    const bool whole = o < r.size() && r[o].is_array();
    const std::size_t width = whole ? 1 : kEntryValues;
    if (r.size() - o < width + 1) unexpected(op, "short 'claimed' reply");
    StoredEvent e = whole ? to_stored_event(op, session_id, r[o])
                          : stored_event_of_values(
                                op, session_id,
                                std::span<const Reply, kEntryValues>(&r.elements[o], kEntryValues));
    o += width;
    e.last_claimed_at = now;
    e.claim_holder = holder;
    e.claim_expires_at = expires_at;
    const Reply& row = r[o++];
    if (row.is_nil()) {
      e.attempt_count = 1;
      e.failure_count = 0;
      e.first_claimed_at = now;
    } else {
      if (!row.is_array() || row.size() != 7) unexpected(op, "bad claim row");
      e.attempt_count = number(op, row[0]);
      e.failure_count = row[1].is_nil() ? 0 : number(op, row[1]);
      if (!row[2].is_nil()) e.last_error = text(op, row[2]);
      e.first_claimed_at = optional_number(op, row[3]);
      e.last_failed_at = optional_number(op, row[4]);
      e.last_failed_attempt = optional_number(op, row[5]);
      e.available_at = optional_number(op, row[6]);  // A delay that has passed, if any.
    }
    if (clear > 0) e.clear_index = clear;
    result.events.push_back(std::move(e));
  }
  if (o != r.size()) unexpected(op, "long 'claimed' reply");
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
