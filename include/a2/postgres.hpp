// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "a2/clock.hpp"
#include "a2/observe.hpp"
#include "a2/store.hpp"

// The Postgres backend (component a2::postgres): tables a2_events, a2_snapshots, ... as in
// experimental-a2 0.18.0 (docs/postgres-layout.md), each write one server-side function call.
namespace a2::postgres {

struct Options {
  std::string connection = "postgresql:///postgres";  // A libpq connection string or URI.
  std::string schema = "public";  // Created if missing; the schema is applied at open().
  std::size_t pool_size = 4;
  // The server's statement_timeout on every connection (0: none); a statement it cancels fails
  // with Unavailable and changed nothing.
  std::chrono::milliseconds statement_timeout{30000};
  std::shared_ptr<Clock> clock{};   // Default: the system clock.
  std::shared_ptr<IdSource> ids{};  // Default: time-ordered ids (TimeOrderedIdSource).
  // Feeds wake on NOTIFY and also poll at this cadence, so a lost notification only delays.
  std::chrono::milliseconds feed_safety_poll{1000};
  // The type of the marker event a clear appends (a valid event type). Default "a2.clear". The
  // one setting that must match the TypeScript services sharing the database.
  std::string clear_event_type = kClearEventType;
  // The client-side deadline of every call, from its start to its answer: the wait for a pooled
  // connection, connecting, and the statement. A call still waiting for the server then has its
  // connection shut down and fails with Unavailable, outcome unknown (the request was sent).
  // Default: statement_timeout + 5 s (35 s with statement_timeout 0), so the server's own
  // cancel, whose outcome is known, comes first.
  std::optional<std::chrono::milliseconds> command_timeout = std::nullopt;
  // How long a call waits for a free pooled connection when all pool_size are in use, at most
  // (the command_timeout bounds it anyway). Past it the call fails with Unavailable; nothing
  // was sent. Default: the command_timeout.
  std::optional<std::chrono::milliseconds> pool_acquire_timeout = std::nullopt;
  ObserveOptions observe{};  // Hooks (a2/observe.hpp). Default: none.
  // Appends of one unsettled event without cause, lane or origin (the common case) written at
  // once, at most: appends started meanwhile wait, and the next to go takes all of them in one
  // call, one transaction and one round trip (docs/postgres-layout.md#write-groups). Each caller
  // still gets its own answer; one whose group the server rejects sends its append alone. An
  // append waits at most pool_acquire_timeout for its turn, then fails with Unavailable; nothing
  // was sent. Default: pool_size, so only appends that would wait for a pooled connection go
  // together; fewer than pool_size groups more under many threads (bench/RESULTS.md) and delays
  // appends of a few threads that could have gone at once (1 does best on a server of two cores
  // from 8 threads up: docs/postgres-layout.md#write-groups). 0: every append is its own call.
  // At most 64.
  std::optional<std::size_t> append_groups = std::nullopt;
  // The same for claims without exclusions, for completions without claim_next and for
  // complete_attempts calls (and completions with claim_next), each kind on its own: at most
  // this many of each kind written at once; those started meanwhile wait, and the next to go
  // takes the queued ones of its kind, one per session, in one call, one transaction and one
  // round trip (docs/postgres-layout.md#write-groups). Each caller still gets its own answer;
  // one whose group the server rejects sends its call alone. Default: pool_size. 0: every claim
  // and completion is its own call. At most 64.
  std::optional<std::size_t> work_groups = std::nullopt;
  // A call waiting for its reply first polls its socket without sleeping, for at most this long
  // (never past its deadline), which saves the sleep and wake-up of its thread: for a server on
  // the same machine and calls that mostly run one at a time. Costs that thread's core while it
  // polls. One thread of the process spins at a time; the others wait at once; the notifier's
  // rounds never spin. After 8 spins in a row without a reply the store stops spinning for a
  // while: 500 times spin_wait, 100 ms to 1 s (docs/semantics.md#spin-wait). 0: never. At most
  // 10 ms. Default 0.
  std::chrono::microseconds spin_wait{0};
};

// Connects, applies sql/schema.sql (idempotent) and checks the schema version. Throws
// a2::Unavailable if it cannot, InvalidArgument for a bad schema name, pool size or
// clear_event_type. The store is safe for concurrent use from many threads.
std::unique_ptr<Store> open(const Options& options);

}  // namespace a2::postgres
