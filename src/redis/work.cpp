// SPDX-License-Identifier: MIT
// The work calls of the Redis store (claim_available, renew_claims, release_claims, held_claims,
// fail_attempt, dead_letters, redrive) and presence. Each is one script through its typed caller
// (src/redis/scripts/).

#include "a2/detail/json_text.hpp"
#include "redis/codec.hpp"
#include "redis/scripts/claim_available.hpp"
#include "redis/scripts/dead_letters.hpp"
#include "redis/scripts/fail_attempt.hpp"
#include "redis/scripts/held_claims.hpp"
#include "redis/scripts/presence.hpp"
#include "redis/scripts/redrive.hpp"
#include "redis/scripts/release_claims.hpp"
#include "redis/scripts/renew_claims.hpp"
#include "redis/store.hpp"

namespace a2::redis::detail {

ClaimResult RedisStore::do_claim_available(const ClaimRequest& q) {
  constexpr std::string_view op = "claim_available";
  return guard(op, [&] {
    const std::int64_t now = clock().now_ms();
    const std::int64_t expires = a2::detail::lease_expires_at(now, q.ttl_ms, q.expires_at_ms);
    return scripts::ClaimAvailable::decode(
        op, q.session_id,
        script(op, scripts::ClaimAvailable{q.session_id, q.holder, now, expires, q.exclude_indexes,
                                           q.max_events}));
  });
}

RenewResult RedisStore::do_renew_claims(const RenewRequest& q) {
  constexpr std::string_view op = "renew_claims";
  return guard(op, [&] {
    const std::int64_t now = clock().now_ms();
    const std::int64_t expires = a2::detail::lease_expires_at(now, q.ttl_ms, q.expires_at_ms);
    return scripts::RenewClaims::decode(
        op, script(op, scripts::RenewClaims{q.session_id, q.holder, now, expires, q.claims}));
  });
}

ReleaseResult RedisStore::do_release_claims(const ReleaseRequest& q) {
  constexpr std::string_view op = "release_claims";
  return guard(op, [&] {
    return scripts::ReleaseClaims::decode(
        op, script(op, scripts::ReleaseClaims{q.session_id, q.holder, clock().now_ms(), q.claims,
                                              q.available_at_ms}));
  });
}

std::vector<HeldClaim> RedisStore::do_held_claims(const std::string& s, const std::string& holder) {
  constexpr std::string_view op = "held_claims";
  return guard(op, [&] {
    return scripts::HeldClaims::decode(
        op, script(op, scripts::HeldClaims{s, holder, clock().now_ms()}));
  });
}

FailResult RedisStore::do_fail_attempt(const FailRequest& q) {
  constexpr std::string_view op = "fail_attempt";
  return guard(op, [&] {
    using V = scripts::FailAttempt::Verdict;
    const auto reply = scripts::FailAttempt::decode(
        op, script(op, scripts::FailAttempt{q.session_id, q.index, q.attempt, q.error,
                                            q.max_failures, clock().now_ms(), q.retry_at_ms}));
    switch (reply.verdict) {
      case V::cleared:
        return FailResult{FailVerdict::superseded, 0};
      case V::missing:
        a2::detail::throw_no_event(site(op), q.session_id, q.index);
      case V::superseded:
        return FailResult{FailVerdict::superseded, reply.failures};
      case V::dead_lettered:
        return FailResult{FailVerdict::dead_lettered, reply.failures};
      case V::failed:
        return FailResult{FailVerdict::failed, reply.failures};
    }
    unexpected(op, "unknown verdict");
  });
}

std::vector<StoredEvent> RedisStore::do_dead_letters(const std::string& s) {
  constexpr std::string_view op = "dead_letters";
  return guard(
      op, [&] { return scripts::DeadLetters::decode(op, s, script(op, scripts::DeadLetters{s})); });
}

RedriveResult RedisStore::do_redrive(const RedriveRequest& q) {
  constexpr std::string_view op = "redrive";
  return guard(op, [&] {
    const auto reply = scripts::Redrive::decode(
        op, script(op, scripts::Redrive{q.session_id, q.index, q.action, clock().now_ms()}));
    return RedriveResult{reply.redriven, reply.has_pending};
  });
}

PresenceMap RedisStore::do_patch_presence(const std::string& s, const PresencePatch& patch) {
  constexpr std::string_view op = "patch_presence";
  return guard(op, [&] {
    const std::int64_t now = clock().now_ms();
    std::optional<std::string> state;
    if (!patch.state.is_null()) state = a2::detail::json_text(patch.state);
    return scripts::PresencePatch::decode(
        op, script(op, scripts::PresencePatch{s, now, patch.participant, std::move(state),
                                              a2::detail::time_after(now, patch.ttl_ms)}));
  });
}

PresenceMap RedisStore::do_read_presence(const std::string& s) {
  constexpr std::string_view op = "read_presence";
  return guard(op, [&] {
    return scripts::PresenceRead::decode(op,
                                         script(op, scripts::PresenceRead{s, clock().now_ms()}));
  });
}

}  // namespace a2::redis::detail
