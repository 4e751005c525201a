// SPDX-License-Identifier: MIT
#include "redis/multiplex.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "a2/errors.hpp"
#include "a2/observe.hpp"

namespace a2::redis::detail {

namespace {
// At most this many requests go in one batch (one write, then their replies in order), so one
// batch's I/O stays short.
constexpr std::size_t kMaxBatch = 64;
// The channel's connection names its operation this in its messages; a caller's message names
// its own operation instead.
constexpr std::string_view kOp = "write";
// The reason of a channel connection's failure, without the operation and outcome the caller
// states itself.
std::string reason(const std::exception& e) {
  std::string why = e.what();
  const std::string prefix = "a2 redis " + std::string(kOp) + ": ";
  if (why.rfind(prefix, 0) == 0) why.erase(0, prefix.size());
  const auto unknown = why.find(" (outcome unknown");
  if (unknown != std::string::npos) why.erase(unknown);
  return why;
}
}  // namespace

struct Multiplexer::Request {
  enum class State {
    queued,   // In the channel's queue: a caller giving up takes it back, unsent.
    taken,    // Taken by the channel's thread for its batch: may be written at any moment.
    written,  // Written: it may run whatever happens next.
    done      // Answered (reply) or failed (error).
  };
  std::string bytes;  // The request in RESP.
  // Until when it may wait in the queue: a request taken past it fails unsent.
  a2::detail::SteadyTime deadline{};
  State state = State::queued;
  bool abandoned = false;  // Its caller gave up: the reply is dropped.
  std::optional<Reply> reply;
  std::string error;  // Set when failed.
  bool outcome_unknown = false;
  bool reconnected = false;  // Its batch opened the channel's connection again: its caller logs.
  std::condition_variable answered;
};

struct Multiplexer::Channel {
  std::mutex m;
  std::condition_variable work;  // A request was queued, the connection came free, or closing.
  std::deque<std::shared_ptr<Request>> queue;
  // A thread uses the connection: a caller sending its own request alone, or the channel's
  // thread with a batch. Whoever clears it wakes the channel's thread if requests are queued.
  bool busy = false;
  bool closing = false;
  std::thread thread;                // Started by the first request that queues; joined by close().
  std::unique_ptr<Connection> conn;  // Used only by the thread that set busy.
  // A connection of this channel broke: the next one opened is a reconnect (a log event, as
  // the pool's).
  bool lost = false;
};

Multiplexer::Multiplexer(std::size_t channels, std::chrono::milliseconds command_timeout,
                         std::chrono::milliseconds queue_timeout, Connect connect)
    : command_timeout_(command_timeout),
      queue_timeout_(queue_timeout),
      connect_(std::move(connect)) {
  if (channels == 0) channels = 1;
  for (std::size_t i = 0; i < channels; ++i) channels_.push_back(std::make_unique<Channel>());
}

Multiplexer::~Multiplexer() { close(); }

void Multiplexer::close() {
  for (auto& ch : channels_) {
    std::thread t;
    {
      std::lock_guard l(ch->m);
      ch->closing = true;
      // Queued requests fail unsent: nothing of theirs reached the server.
      for (auto& r : ch->queue) {
        r->state = Request::State::done;
        r->error = "the store is closed";
        r->answered.notify_all();
      }
      ch->queue.clear();
      t = std::move(ch->thread);
    }
    ch->work.notify_all();
    if (t.joinable()) t.join();
  }
}

Reply Multiplexer::request(std::string_view op, const std::function<void(Resp&)>& encode,
                           a2::detail::SteadyTime deadline) {
  // Encoded before taking the channel's lock, so callers encode in parallel; a caller that
  // then finds the channel idle sends these bytes itself, and only a request that queues is
  // made a Request.
  std::string bytes;
  {
    Resp resp(bytes);
    encode(resp);
  }
  Channel& ch = *channels_[next_.fetch_add(1, std::memory_order_relaxed) % channels_.size()];
  std::unique_lock l(ch.m);
  if (ch.closing) throw Unavailable("a2 redis " + std::string(op) + ": the store is closed");
  if (!ch.busy && ch.queue.empty()) {
    // An idle channel: the caller sends its request itself, as on a pooled connection, and
    // pays no hand-off between threads.
    ch.busy = true;
    l.unlock();
    const auto release = [&] {
      std::lock_guard relock(ch.m);
      ch.busy = false;
      if (!ch.queue.empty()) ch.work.notify_one();
    };
    try {
      if (open(ch, deadline)) a2::detail::log_reconnect("redis", op);
      ch.conn->set_deadline(deadline);
      Reply reply = ch.conn->command_with(op, [&](Resp& resp) { resp.raw(bytes); });
      release();
      return reply;
    } catch (...) {
      if (ch.conn && ch.conn->broken()) {
        ch.conn.reset();
        ch.lost = true;
      }
      release();
      throw;
    }
  }
  if (!ch.thread.joinable()) ch.thread = std::thread([this, &ch] { run(ch); });
  auto r = std::make_shared<Request>();
  r->bytes = std::move(bytes);
  // Queued at most queue_timeout (as a call waits for a pooled connection), then until the
  // deadline for the answer.
  r->deadline = std::min(deadline, std::chrono::steady_clock::now() + queue_timeout_);
  ch.queue.push_back(r);
  if (ch.queue.size() == 1 && !ch.busy) ch.work.notify_one();
  r->answered.wait_until(l, r->deadline, [&] { return r->state != Request::State::queued; });
  if (r->state == Request::State::queued) {
    // Still queued: take it back; nothing was sent.
    for (auto it = ch.queue.begin(); it != ch.queue.end(); ++it)
      if (*it == r) {
        ch.queue.erase(it);
        break;
      }
    throw Unavailable("a2 redis " + std::string(op) +
                      ": no write connection came free in time (nothing was sent)");
  }
  r->answered.wait_until(l, deadline, [&] { return r->state == Request::State::done; });
  if (r->state != Request::State::done) {
    r->abandoned = true;
    ++a2::detail::t_round_trips;
    throw Unavailable("a2 redis " + std::string(op) +
                          ": timed out (outcome unknown: the command was sent before the "
                          "deadline passed)",
                      true);
  }
  if (r->reconnected) a2::detail::log_reconnect("redis", op);
  if (r->reply || r->outcome_unknown) ++a2::detail::t_round_trips;  // observe.hpp
  if (r->reply) return std::move(*r->reply);
  std::string message = "a2 redis " + std::string(op) + ": " + r->error;
  if (r->outcome_unknown)
    message += " (outcome unknown: the command was sent before the connection failed)";
  throw Unavailable(message, r->outcome_unknown);
}

bool Multiplexer::open(Channel& ch, a2::detail::SteadyTime deadline) {
  if (ch.conn && !ch.conn->idle_alive()) {  // Closed by the server while idle.
    ch.conn.reset();
    ch.lost = true;
  }
  if (ch.conn) return false;
  ch.conn = connect_(deadline);
  return std::exchange(ch.lost, false);
}

void Multiplexer::run(Channel& ch) {
  std::unique_ptr<Connection>& conn = ch.conn;
  std::vector<std::shared_ptr<Request>> batch;
  std::vector<const std::string*> bytes;
  const std::string_view op = kOp;
  // Fails requests batch[from..] with `why`; outcome unknown for those already written.
  const auto fail_from = [&](std::size_t from, const std::string& why) {
    std::lock_guard l(ch.m);
    for (std::size_t i = from; i < batch.size(); ++i) {
      auto& r = *batch[i];
      r.outcome_unknown = r.state == Request::State::written;
      r.error = why;
      r.state = Request::State::done;
      r.answered.notify_all();
    }
  };
  for (;;) {
    if (!batch.empty()) {
      std::lock_guard l(ch.m);
      ch.busy = false;
    }
    batch.clear();
    {
      std::unique_lock l(ch.m);
      ch.work.wait(l, [&] { return ch.closing || (!ch.queue.empty() && !ch.busy); });
      if (ch.queue.empty() || ch.busy) return;  // Closing, and nothing left for this thread.
      ch.busy = true;
      const auto now = std::chrono::steady_clock::now();
      while (!ch.queue.empty() && batch.size() < kMaxBatch) {
        auto r = std::move(ch.queue.front());
        ch.queue.pop_front();
        if (r->deadline <= now) {
          // Its caller is giving up unsent (it takes nothing back from the queue any more).
          r->state = Request::State::done;
          r->error = "no write connection came free in time (nothing was sent)";
          r->answered.notify_all();
          continue;
        }
        r->state = Request::State::taken;
        batch.push_back(std::move(r));
      }
      if (batch.empty()) {
        ch.busy = false;
        continue;
      }
    }
    const auto deadline = std::chrono::steady_clock::now() + command_timeout_;
    try {
      if (open(ch, deadline)) batch.front()->reconnected = true;  // Read after `done`.
    } catch (const std::exception& e) {
      fail_from(0, reason(e));
      continue;
    }
    conn->set_deadline(deadline);
    bytes.clear();
    for (const auto& r : batch) bytes.push_back(&r->bytes);
    try {
      conn->send_encoded(op, bytes);
    } catch (const std::exception& e) {
      conn.reset();
      ch.lost = true;
      // A write that failed part way may have carried the first requests of a batch whole, so
      // only a lone request keeps the connection's verdict (a partial request never runs); any
      // failure other than the connection's own (out of memory) may have come after the write.
      const auto* unavailable = dynamic_cast<const Unavailable*>(&e);
      if (batch.size() > 1 || !unavailable || unavailable->outcome_unknown()) {
        std::lock_guard l(ch.m);
        for (auto& r : batch) r->state = Request::State::written;
      }
      fail_from(0, reason(e));
      continue;
    }
    {
      std::lock_guard l(ch.m);
      for (auto& r : batch) r->state = Request::State::written;
    }
    for (std::size_t i = 0; i < batch.size(); ++i) {
      std::optional<Reply> reply;
      try {
        reply = conn->next_reply(op);
      } catch (const std::exception& e) {  // Unavailable, or out of memory decoding a reply.
        conn.reset();
        ch.lost = true;
        fail_from(i, reason(e));
        break;
      }
      auto& r = *batch[i];
      {
        std::lock_guard l(ch.m);
        if (!r.abandoned) r.reply = std::move(reply);
        r.state = Request::State::done;
      }
      // After unlocking (the batch keeps r alive): woken under the lock, the caller would at
      // once wait for it again.
      r.answered.notify_all();
    }
  }
}

}  // namespace a2::redis::detail
