// SPDX-License-Identifier: MIT
#pragma once

// What a Redis store and its live feeds share (Core), the deadline of a store call, and the
// backend's sizes.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "a2/detail/constants.hpp"
#include "a2/redis.hpp"
#include "common/spin_wait.hpp"
#include "redis/client.hpp"
#include "redis/keys.hpp"
#include "redis/multiplex.hpp"

namespace a2::redis::detail {

// A subscription (a feed's, a work watch's) that lost its connection subscribes again after a
// backoff between these.
inline constexpr auto kResubscribeMin = std::chrono::milliseconds(50);
inline constexpr auto kResubscribeMax = std::chrono::milliseconds(5000);

// Options::write_connections at most (the multiplexer makes its channels up front).
inline constexpr std::size_t kMaxWriteConnections = 64;

using a2::detail::kFeedPageSize;
using a2::detail::kReadPageSize;
// Pages per batch of a range read's staged pipeline (reads.cpp): the next batch is sent as soon
// as this one is answered, so the server works on it while the client decodes this one.
inline constexpr std::int64_t kReadBatchPages = 2;

inline std::string str(std::int64_t v) { return std::to_string(v); }

// The deadline of the store call running on this thread (set by CallDeadline), so that every
// connection a call acquires counts against the one deadline.
inline thread_local std::optional<a2::detail::SteadyTime> t_call_deadline;

// Sets the thread's call deadline for its lifetime, unless an outer call set one.
class CallDeadline {
 public:
  explicit CallDeadline(std::chrono::milliseconds timeout) : owner_(!t_call_deadline) {
    if (owner_) t_call_deadline = std::chrono::steady_clock::now() + timeout;
  }
  ~CallDeadline() {
    if (owner_) t_call_deadline.reset();
  }
  CallDeadline(const CallDeadline&) = delete;
  CallDeadline& operator=(const CallDeadline&) = delete;

 private:
  bool owner_;
};

// What a store and its feeds share; outlives the store while a feed holds it.
struct Core {
  Core(Endpoint endpoint, const Options& o)
      : options(o),
        keys{o.key_prefix},
        spin(a2::detail::make_spin_pacer(o.spin_wait)),
        pool("redis", o.pool_size, o.pool_acquire_timeout.value_or(o.command_timeout),
             connector(endpoint, o, spin)),
        mux(o.write_connections, o.command_timeout,
            o.pool_acquire_timeout.value_or(o.command_timeout), connector(endpoint, o, spin)) {}

  // Opens a connection by a deadline: connecting and its AUTH/SELECT count against it too. Its
  // calls' waits spin by the store's pacer `spin` (null: never).
  static Pool::Connect connector(Endpoint endpoint, const Options& o,
                                 std::shared_ptr<a2::detail::SpinPacer> spin) {
    return [endpoint = std::move(endpoint), connect_timeout = o.connect_timeout,
            command_timeout = o.command_timeout,
            spin = std::move(spin)](a2::detail::SteadyTime deadline) {
      auto left = std::max(std::chrono::ceil<std::chrono::milliseconds>(
                               deadline - std::chrono::steady_clock::now()),
                           std::chrono::milliseconds(1));
      return std::make_unique<Connection>(endpoint, std::min(connect_timeout, left),
                                          std::min(command_timeout, left), spin);
    };
  }

  // The deadline of the calling thread's store call (command_timeout from the call's start).
  a2::detail::SteadyTime deadline() const {
    return t_call_deadline.value_or(std::chrono::steady_clock::now() + options.command_timeout);
  }

  // A pooled connection for the calling thread's store call: its wait and every command it
  // sends end by the call's deadline (command_timeout from the call's start).
  Pool::Lease acquire(std::string_view op) {
    const auto by = deadline();
    auto lease = pool.acquire(op, by);
    lease->set_deadline(by);
    return lease;
  }

  Options options;
  Keys keys;
  // The store's spin_wait and its pacing, shared by its connections (null: spin_wait 0).
  std::shared_ptr<a2::detail::SpinPacer> spin;
  Pool pool;
  Multiplexer mux;  // The write requests of single script calls (write_connections > 0).
  std::atomic<bool> closed{false};
};

}  // namespace a2::redis::detail
