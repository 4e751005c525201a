// SPDX-License-Identifier: MIT
#pragma once

// The connection pool both server backends share: a fixed number of connections handed to the
// calling threads, opened lazily, checked before reuse, and waited for with a deadline.
//
// A backend plugs in its connection type, which provides
//   bool broken() const   a transport failure (or a timeout) made it unusable; it is dropped
//                         instead of going back to the pool;
//   bool idle_alive()     a cheap check, without a round trip, that an idle connection was not
//                         closed by the server meanwhile (a non-blocking poll of its socket);
// and a function that opens a new connection by a deadline.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "a2/errors.hpp"
#include "a2/observe.hpp"

namespace a2::detail {

using SteadyTime = std::chrono::steady_clock::time_point;

// Thread-safe.
template <class Connection>
class Pool {
 public:
  // Opens a new connection, giving up by the deadline. Throws (the backend translates).
  using Connect = std::function<std::unique_ptr<Connection>(SteadyTime deadline)>;

  // `backend` names it in messages ("redis", "postgres"). A call waits for a free connection at
  // most `acquire_timeout` (and never past its own deadline).
  Pool(std::string backend, std::size_t size, std::chrono::milliseconds acquire_timeout,
       Connect connect)
      : backend_(std::move(backend)),
        size_(size == 0 ? 1 : size),
        acquire_timeout_(acquire_timeout),
        connect_(std::move(connect)) {}
  ~Pool() { close(); }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // A borrowed connection, returned to the pool on destruction (dropped when broken).
  class Lease {
   public:
    Lease(Pool* pool, std::unique_ptr<Connection> connection)
        : pool_(pool), connection_(std::move(connection)) {}
    Lease(Lease&& other) noexcept = default;
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease() {
      if (pool_ && connection_) pool_->give_back(std::move(connection_));
    }
    Connection* operator->() const { return connection_.get(); }
    Connection& operator*() const { return *connection_; }

   private:
    Pool* pool_;
    std::unique_ptr<Connection> connection_;
  };

  // A connection for a call that must end by `deadline`: an idle one that is still alive, else a
  // new one when fewer than `size` exist, else the first to come back. Idle connections the
  // server closed are dropped here, so they never fail a call. Throws Unavailable when the pool
  // is closed or no connection became free in time; the connect function's exceptions pass.
  Lease acquire(std::string_view op, SteadyTime deadline) {
    const SteadyTime wait_until =
        std::min(deadline, std::chrono::steady_clock::now() + acquire_timeout_);
    std::unique_lock lock(mutex_);
    for (;;) {
      if (closed_) throw Unavailable(context(op) + "the store is closed");
      while (!idle_.empty()) {
        auto c = std::move(idle_.back());
        idle_.pop_back();
        // The check (a system call) runs outside the lock: other threads take and give back
        // connections meanwhile. The connection is lent (counted in open_) while checked.
        lock.unlock();
        if (c->idle_alive()) return Lease(this, std::move(c));
        c.reset();  // Closed by the server while idle: drop it and look on.
        lock.lock();
        --open_;
        lost_ = true;
        if (closed_) throw Unavailable(context(op) + "the store is closed");
      }
      if (open_ < size_) {
        ++open_;
        lock.unlock();
        try {
          Lease lease(this, connect_(deadline));
          if (lost_.exchange(false))
            log_event(LogLevel::info, "reconnect",
                      context(op) + "connected again after a connection was lost");
          return lease;
        } catch (...) {
          lock.lock();
          --open_;
          lock.unlock();
          available_.notify_one();
          throw;
        }
      }
      if (available_.wait_until(lock, wait_until) == std::cv_status::timeout && idle_.empty() &&
          open_ >= size_ && !closed_)
        throw Unavailable(context(op) + "no connection of the pool (" + std::to_string(size_) +
                          ") became free in time; nothing was sent");
    }
  }

  // A new connection outside the pool (feeds' subscriptions, the LISTEN connection).
  std::unique_ptr<Connection> connect_dedicated(SteadyTime deadline) const {
    return connect_(deadline);
  }

  // Hands a connection opened outside the pool to it (dropped when the pool is full or closed).
  void adopt(std::unique_ptr<Connection> connection) {
    std::unique_lock lock(mutex_);
    if (closed_ || open_ >= size_) return;
    ++open_;
    idle_.push_back(std::move(connection));
    lock.unlock();
    available_.notify_one();
  }

  // Drops idle connections; later acquire() calls throw Unavailable. Connections in use are
  // dropped when they come back.
  void close() {
    std::vector<std::unique_ptr<Connection>> drop;
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
      open_ -= idle_.size();
      drop.swap(idle_);
    }
    available_.notify_all();
  }

  bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }

 private:
  std::string context(std::string_view op) const {
    return "a2 " + backend_ + " " + std::string(op) + ": ";
  }

  void give_back(std::unique_ptr<Connection> connection) {
    std::unique_lock lock(mutex_);
    if (closed_ || connection->broken()) {
      --open_;
      if (!closed_) lost_ = true;
      lock.unlock();
      available_.notify_one();
      connection.reset();  // Outside the lock: closing may take a moment.
      return;
    }
    idle_.push_back(std::move(connection));
    lock.unlock();
    available_.notify_one();
  }

  const std::string backend_;
  const std::size_t size_;
  const std::chrono::milliseconds acquire_timeout_;
  const Connect connect_;
  mutable std::mutex mutex_;
  std::condition_variable available_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::size_t open_ = 0;  // Idle plus lent out plus being connected.
  // A connection was dropped as broken: the next one opened is a reconnect (a log event).
  std::atomic<bool> lost_{false};
  bool closed_ = false;
};

}  // namespace a2::detail
