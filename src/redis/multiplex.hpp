// SPDX-License-Identifier: MIT
#pragma once

// The store's writes from many threads over a few shared connections (docs/redis-layout.md#
// multiplexed-writes): a caller hands its encoded request to a channel and waits for the reply;
// the channel's thread writes every request queued meanwhile in one write and reads their
// replies in order, handing each to its caller. Each caller still sees one round trip; the server
// reads many requests per read event and answers them with one write, which on a busy server is
// most of the cost of a small script call (bench/RESULTS.md).
//
// Faults stay per request: a request not yet written fails unsent (Unavailable, outcome known:
// nothing ran), one written before its connection failed fails with the outcome unknown, and a
// broken connection fails only the requests written on it; the channel opens a new one for the
// next batch. A caller waits at most until its deadline: past it, a request still queued is taken
// back (unsent), a written one is abandoned (outcome unknown) and its late reply dropped.
//
// Thread-safe. Channels start their thread on first use; close() (and the destructor) fails the
// queued requests unsent, lets a batch in flight finish (bounded by command_timeout) and joins.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/pool.hpp"
#include "redis/client.hpp"

namespace a2::redis::detail {

class Multiplexer {
 public:
  // Opens a channel's connection by a deadline (the pool's connect function).
  using Connect = std::function<std::unique_ptr<Connection>(a2::detail::SteadyTime deadline)>;

  // `channels` connections (at least 1); each batch's I/O ends by command_timeout after it
  // starts. A request waits in a channel's queue at most queue_timeout (and never past its
  // deadline), then fails unsent, as a call waiting for a pooled connection does.
  Multiplexer(std::size_t channels, std::chrono::milliseconds command_timeout,
              std::chrono::milliseconds queue_timeout, Connect connect);
  ~Multiplexer();
  Multiplexer(const Multiplexer&) = delete;
  Multiplexer& operator=(const Multiplexer&) = delete;

  // Sends the one request `encode` writes and returns its reply (an error reply is returned, not
  // thrown). Throws Unavailable("a2 redis <op>: ...") on a transport failure, a closed
  // multiplexer or the deadline, with outcome_unknown when the request had been written.
  Reply request(std::string_view op, const std::function<void(Resp&)>& encode,
                a2::detail::SteadyTime deadline);

  // Idempotent.
  void close();

 private:
  struct Request;
  struct Channel;
  // The channel's thread: takes the queued requests in batches.
  void run(Channel& channel);
  // Makes sure the channel has a live connection, by the deadline; true when it opened one
  // after a connection of the channel was lost. For the thread that set the channel busy.
  bool open(Channel& channel, a2::detail::SteadyTime deadline);

  std::chrono::milliseconds command_timeout_;
  std::chrono::milliseconds queue_timeout_;
  Connect connect_;
  std::vector<std::unique_ptr<Channel>> channels_;
  std::atomic<std::size_t> next_{0};
};

}  // namespace a2::redis::detail
