// SPDX-License-Identifier: MIT
// Each typed caller's script: the one place the generated header of the embedded Lua is included.

#include "a2/embedded/lua_scripts.hpp"
#include "redis/scripts/append.hpp"
#include "redis/scripts/claim_available.hpp"
#include "redis/scripts/clear.hpp"
#include "redis/scripts/complete_attempt.hpp"
#include "redis/scripts/dead_letters.hpp"
#include "redis/scripts/fail_attempt.hpp"
#include "redis/scripts/find_work.hpp"
#include "redis/scripts/held_claims.hpp"
#include "redis/scripts/index_session.hpp"
#include "redis/scripts/inspect_session.hpp"
#include "redis/scripts/presence.hpp"
#include "redis/scripts/put_snapshots.hpp"
#include "redis/scripts/read_state.hpp"
#include "redis/scripts/reclaim.hpp"
#include "redis/scripts/redrive.hpp"
#include "redis/scripts/release_claims.hpp"
#include "redis/scripts/renew_claims.hpp"

namespace a2::redis::detail::scripts {

namespace lua = a2::detail::lua;

const a2::detail::EmbeddedText& Append::script() { return lua::kAppend; }
const a2::detail::EmbeddedText& AppendOne::script() { return lua::kAppendOne; }
const a2::detail::EmbeddedText& ClaimAvailable::script() { return lua::kClaimAvailable; }
const a2::detail::EmbeddedText& Clear::script() { return lua::kClear; }
const a2::detail::EmbeddedText& CompleteAttempt::script() { return lua::kCompleteAttempt; }
const a2::detail::EmbeddedText& CompleteAttempts::script() { return lua::kCompleteAttempts; }
const a2::detail::EmbeddedText& DeadLetters::script() { return lua::kDeadLetters; }
const a2::detail::EmbeddedText& FailAttempt::script() { return lua::kFailAttempt; }
const a2::detail::EmbeddedText& FindWork::script() { return lua::kFindWork; }
const a2::detail::EmbeddedText& HeldClaims::script() { return lua::kHeldClaims; }
const a2::detail::EmbeddedText& IndexSession::script() { return lua::kIndexSession; }
const a2::detail::EmbeddedText& InspectSession::script() { return lua::kInspectSession; }
const a2::detail::EmbeddedText& PresencePatch::script() { return lua::kPresencePatch; }
const a2::detail::EmbeddedText& PresenceRead::script() { return lua::kPresenceRead; }
const a2::detail::EmbeddedText& PutSnapshots::script() { return lua::kPutSnapshots; }
const a2::detail::EmbeddedText& ReadState::script() { return lua::kReadState; }
const a2::detail::EmbeddedText& Reclaim::script() { return lua::kReclaim; }
const a2::detail::EmbeddedText& ReclaimBatch::script() { return lua::kReclaimBatch; }
const a2::detail::EmbeddedText& Redrive::script() { return lua::kRedrive; }
const a2::detail::EmbeddedText& ReleaseClaims::script() { return lua::kReleaseClaims; }
const a2::detail::EmbeddedText& RenewClaims::script() { return lua::kRenewClaims; }

}  // namespace a2::redis::detail::scripts
