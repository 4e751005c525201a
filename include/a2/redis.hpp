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

// The Redis backend (component a2::redis): the log is a Redis stream, every write one Lua
// script run by SHA. Data-compatible with experimental-a2 0.18.0 (docs/redis-layout.md).
// Single-node Redis only (the scripts derive keys, which Redis Cluster forbids).
namespace a2::redis {

struct Options {
  // "redis://[:password@]host[:port][/db]" or "unix:///path/to/socket". Default: local server.
  std::string url = "redis://127.0.0.1:6379";
  // Keys are "<key_prefix>:<session>:log", ... as in the original package. Default "a2". At most
  // 200 bytes of UTF-8 without ':', spaces or control characters, so that no two prefixes share
  // a key.
  std::string key_prefix = "a2";
  std::size_t pool_size = 4;  // Connections shared by the calling threads.
  std::chrono::milliseconds connect_timeout{2000};
  // The deadline of every call, from its start to its answer: the wait for a pooled connection
  // and every round trip it makes. Past it the call fails with Unavailable (outcome unknown
  // once a write was sent).
  std::chrono::milliseconds command_timeout{5000};
  std::shared_ptr<Clock> clock{};   // Default: the system clock.
  std::shared_ptr<IdSource> ids{};  // Default: time-ordered ids (TimeOrderedIdSource).
  // Live feeds poll at this cadence even when wake-ups arrive, so a lost message only delays.
  std::chrono::milliseconds feed_safety_poll{1000};
  // The type of the marker event a clear appends (a valid event type). Default "a2.clear". The
  // one setting that must match the TypeScript services sharing the database.
  std::string clear_event_type = kClearEventType;
  // How long a call waits for a free pooled connection when all pool_size are in use, at most
  // (the call's command_timeout bounds it anyway), and a call through the write connections in
  // their queue. Past it the call fails with Unavailable; nothing was sent. Default: the
  // command_timeout.
  std::optional<std::chrono::milliseconds> pool_acquire_timeout = std::nullopt;
  ObserveOptions observe{};  // Hooks (a2/observe.hpp). Default: none.
  // Connections that carry the writes (each one script call) of all calling threads, besides
  // the pool: the writes queued while a batch is in flight go together in the next write, and
  // each caller still waits for its own reply (docs/redis-layout.md#multiplexed-writes). 0: writes
  // use the pool, one connection per call, as reads do. At most 64. Default 2.
  std::size_t write_connections = 2;
  // A call waiting for its reply first polls its socket without sleeping, for at most this long
  // (never past its deadline), which saves the sleep and wake-up of its thread: for a server on
  // the same machine and calls that mostly run one at a time. Costs that thread's core while it
  // polls. One thread of the process spins at a time; the others wait at once. After 8 spins in
  // a row without a reply the store stops spinning for a while: 500 times spin_wait, 100 ms to
  // 1 s (docs/semantics.md#spin-wait). 0: never. At most 10 ms. Default 0.
  std::chrono::microseconds spin_wait{0};
};

// Connects and checks the server. Throws a2::Unavailable if it cannot, InvalidArgument for a
// malformed url, prefix or clear_event_type. The store is safe for concurrent use from many
// threads.
std::unique_ptr<Store> open(const Options& options);

}  // namespace a2::redis
