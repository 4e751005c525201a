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

// The log event of a connection opened after one was lost: the pool's, and the Redis write
// connections' (src/redis/multiplex.cpp).
inline void log_reconnect(std::string_view backend, std::string_view op) {
  log_event(LogLevel::info, "reconnect",
            "a2 " + std::string(backend) + " " + std::string(op) +
                ": connected again after a connection was lost");
}

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
  // new one when fewer than `size` exist, else the first to come back. Callers that wait are
  // served first come, first served: a connection given back goes to the longest waiter, never
  // to a caller that arrives later (a thread that gives one back and asks again at once does not
  // starve the others). Idle connections the server closed are dropped here, so they never fail
  // a call. Throws Unavailable when the pool is closed or no connection became free in time; the
  // connect function's exceptions pass.
  Lease acquire(std::string_view op, SteadyTime deadline) {
    const SteadyTime wait_until =
        std::min(deadline, std::chrono::steady_clock::now() + acquire_timeout_);
    std::unique_lock lock(mutex_);
    bool my_turn = false;  // Called from the head of the queue: may take or open one.
    for (;;) {
      if (closed_) throw Unavailable(context(op) + "the store is closed");
      if (my_turn || waiters_.empty()) {
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
          return open_new(op, deadline);
        }
      }
      // Wait in line for a connection given back (or a free place to open one).
      Waiter me;
      waiters_.push_back(&me);
      const bool signalled =
          me.cv.wait_until(lock, wait_until, [&] { return me.served || closed_; });
      if (!me.served) std::erase(waiters_, &me);
      if (me.connection) {
        auto c = std::move(me.connection);
        lock.unlock();
        if (c->idle_alive()) return Lease(this, std::move(c));
        c.reset();
        lock.lock();
        --open_;
        lost_ = true;
      }
      if (!signalled && !closed_)
        throw Unavailable(context(op) + "no connection of the pool (" + std::to_string(size_) +
                          ") became free in time; nothing was sent");
      my_turn = me.served;
    }
  }

  // A new connection outside the pool (feeds' subscriptions, the LISTEN connection).
  std::unique_ptr<Connection> connect_dedicated(SteadyTime deadline) const {
    return connect_(deadline);
  }

  // Hands a connection opened outside the pool to it (dropped when the pool is full or closed).
  void adopt(std::unique_ptr<Connection> connection) {
    std::lock_guard lock(mutex_);
    if (closed_ || open_ >= size_) return;
    ++open_;
    put_locked(std::move(connection));
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
      for (Waiter* w : waiters_) w->cv.notify_one();
    }
  }

  bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }

  // How many callers wait for a connection now.
  std::size_t waiting() const {
    std::lock_guard lock(mutex_);
    return waiters_.size();
  }

 private:
  std::string context(std::string_view op) const {
    return "a2 " + backend_ + " " + std::string(op) + ": ";
  }

  // A caller waiting for a connection (on its own stack, in waiters_ until served).
  struct Waiter {
    std::condition_variable cv;
    bool served = false;  // Taken out of waiters_: `connection` holds one, or it may open one.
    std::unique_ptr<Connection> connection;
  };

  // Opens a connection for acquire(), whose place (open_) is already counted.
  Lease open_new(std::string_view op, SteadyTime deadline) {
    try {
      Lease lease(this, connect_(deadline));
      if (lost_.exchange(false)) log_reconnect(backend_, op);
      return lease;
    } catch (...) {
      std::lock_guard lock(mutex_);
      --open_;
      serve_first_locked(nullptr);  // The place is free again: the first waiter may open one.
      throw;
    }
  }

  // Hands `connection` (or, when null, a free place to open one) to the longest waiter; false
  // when nobody waits. mutex_ held; the waiter is notified under it (it may leave at once).
  bool serve_first_locked(std::unique_ptr<Connection> connection) {
    if (waiters_.empty()) return false;
    Waiter* w = waiters_.front();
    waiters_.erase(waiters_.begin());
    w->served = true;
    w->connection = std::move(connection);
    w->cv.notify_one();
    return true;
  }

  // A healthy connection back: to the longest waiter, else idle. mutex_ held.
  void put_locked(std::unique_ptr<Connection> connection) {
    if (waiters_.empty())
      idle_.push_back(std::move(connection));
    else
      (void)serve_first_locked(std::move(connection));
  }

  void give_back(std::unique_ptr<Connection> connection) {
    std::unique_lock lock(mutex_);
    if (closed_ || connection->broken()) {
      --open_;
      if (!closed_) {
        lost_ = true;
        (void)serve_first_locked(nullptr);
      }
      lock.unlock();
      connection.reset();  // Outside the lock: closing may take a moment.
      return;
    }
    put_locked(std::move(connection));
  }

  const std::string backend_;
  const std::size_t size_;
  const std::chrono::milliseconds acquire_timeout_;
  const Connect connect_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::vector<Waiter*> waiters_;  // In arrival order; served from the front.
  std::size_t open_ = 0;          // Idle plus lent out plus being connected.
  // A connection was dropped as broken: the next one opened is a reconnect (a log event).
  std::atomic<bool> lost_{false};
  bool closed_ = false;
};

}  // namespace a2::detail
