// SPDX-License-Identifier: MIT
// The work watch of the Redis store (docs/redis-layout.md#work-index).

#include "redis/work_watch.hpp"

#include <algorithm>
#include <atomic>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "a2/detail/redis_key_words.hpp"
#include "redis/codec.hpp"
#include "redis/discovery.hpp"
#include "redis/errors.hpp"
#include "redis/store.hpp"

namespace a2::redis::detail {
namespace {

constexpr auto kWaitSlice = std::chrono::milliseconds(50);  // cancel()/close() latency.

using SteadyClock = std::chrono::steady_clock;

// Every message on `<prefix>:*:notify` names its session in the channel: wake-ups of appends,
// completions with children and clears, and the frontier-only work signals of failures,
// releases, redrives and lane hand-offs (docs/redis-layout.md#wake-up-messages). A wake-up that
// ends with `,"w":0}` (an append or completion that queued no work) is not a signal.
class RedisWorkWatch final : public WorkWatch {
 public:
  RedisWorkWatch(std::shared_ptr<Core> core, Clock& clock, std::chrono::milliseconds interval)
      : core_(std::move(core)), clock_(clock), interval_(interval) {
    subscriber_ = subscribe_connection(core_->options.command_timeout);
    next_sweep_ = SteadyClock::now() + interval_;
  }

  WorkSignal wait(std::chrono::milliseconds timeout) override {
    constexpr std::string_view op = "watch_work";
    try {
      WorkSignal signal;
      std::set<std::string> seen;
      auto add = [&](std::string session) {
        if (seen.insert(session).second) signal.session_ids.push_back(std::move(session));
      };
      const auto deadline = SteadyClock::now() + timeout;
      for (;;) {
        if (cancelled_.load()) return {};
        if (core_->closed.load()) fail(op, "the store is closed");
        auto now = SteadyClock::now();
        if (!subscriber_ && now >= resubscribe_at_) resubscribe();
        if (resync_) {
          resync_ = false;
          signal.resync = true;
        }
        now = SteadyClock::now();
        if (interval_.count() > 0 && now >= next_sweep_) {
          next_sweep_ = now + interval_;
          try {
            auto found = sweep(*core_, clock_).indexed;
            if (!found.empty())
              observer_.log(LogLevel::info, "safety_poll_catch_up",
                            "a2 redis watch_work: the safety sweep found work in " +
                                std::to_string(found.size()) + " session(s) no wake-up announced");
            for (auto& entry : found) add(std::move(entry.session_id));
          } catch (const Unavailable&) {
            // The server is unreachable: the next interval sweeps again. Signals are hints,
            // so a failed sweep is not the waiter's error.
          }
        }
        // Drain what has arrived without waiting once there is something to return.
        const bool have = signal.resync || !signal.session_ids.empty();
        now = SteadyClock::now();
        if (!have && now >= deadline) return signal;
        auto until = have ? now : deadline;
        if (interval_.count() > 0) until = std::min(until, next_sweep_);
        if (!subscriber_) until = std::min(until, resubscribe_at_);
        const auto slice =
            std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(until - now),
                       std::chrono::milliseconds(1), kWaitSlice);
        if (!subscriber_) {
          if (have) return signal;
          std::this_thread::sleep_for(slice);
          continue;
        }
        std::optional<Reply> message;
        try {
          message = subscriber_->receive(op, slice);
        } catch (const Unavailable&) {
          // Lost (a restart, CLIENT KILL): subscribe again at once; what was published
          // meanwhile is lost, so the next wait reports resync.
          subscriber_.reset();
          resubscribe_at_ = SteadyClock::now();
          continue;
        }
        if (!message) {
          if (have) return signal;
          continue;
        }
        apply(*message, add, signal);
      }
    } catch (...) {
      translate_current(op);
    }
  }

  void cancel() noexcept override { cancelled_.store(true); }
  bool cancelled() const noexcept override { return cancelled_.load(); }

 private:
  // A `pmessage` [pmessage, pattern, channel, data]: its session is a signal, unless the
  // data is a wake-up marked `,"w":0}`; a channel that names no session asks for a resync.
  template <class Add>
  void apply(const Reply& message, Add& add, WorkSignal& signal) {
    if (!message.is_array() || message.size() != 4 || message[0].str != "pmessage") return;
    constexpr std::string_view kNoWork = ",\"w\":0}";  // Only ever at the end of the text.
    const std::string& data = message[3].str;
    if (data.size() >= kNoWork.size() &&
        data.compare(data.size() - kNoWork.size(), kNoWork.size(), kNoWork) == 0)
      return;
    auto session = session_of(core_->keys, message[2].str, a2::detail::redis_key_words::kNotify);
    if (session)
      add(std::move(*session));
    else
      signal.resync = true;
  }

  // A new connection PSUBSCRIBEd to `<prefix>:*:notify`, confirmed within `timeout`.
  std::unique_ptr<Connection> subscribe_connection(std::chrono::milliseconds timeout) {
    constexpr std::string_view op = "watch_work";
    auto c = core_->pool.connect_dedicated(SteadyClock::now() + core_->options.connect_timeout);
    c->send(op, {"PSUBSCRIBE", glob_escape(core_->keys.prefix) +
                                   ":*:" + std::string(a2::detail::redis_key_words::kNotify)});
    auto confirmation = c->receive(op, timeout);
    if (!confirmation) fail(op, "PSUBSCRIBE timed out");
    if (confirmation->is_error()) fail(op, confirmation->str);
    if (!confirmation->is_array() || confirmation->size() < 1 ||
        (*confirmation)[0].str != "psubscribe")
      unexpected(op, "PSUBSCRIBE was not confirmed");
    return c;
  }

  // Subscribes again; on failure tries again after a backoff doubling from kResubscribeMin up
  // to kResubscribeMax. Once back, the next wait reports resync.
  void resubscribe() {
    try {
      subscriber_ = subscribe_connection(core_->options.command_timeout);
      backoff_ = kResubscribeMin;
      resync_ = true;
    } catch (const Error&) {
      subscriber_.reset();
      resubscribe_at_ = SteadyClock::now() + backoff_;
      backoff_ = std::min(backoff_ * 2, kResubscribeMax);
    }
  }

  std::shared_ptr<Core> core_;
  Clock& clock_;
  std::chrono::milliseconds interval_;
  std::atomic<bool> cancelled_{false};
  std::unique_ptr<Connection> subscriber_;  // Null while the subscription is lost.
  SteadyClock::time_point resubscribe_at_;
  std::chrono::milliseconds backoff_ = kResubscribeMin;
  SteadyClock::time_point next_sweep_;
  const a2::detail::CapturedObserver observer_ = a2::detail::CapturedObserver::current();
  bool resync_ = false;
};

}  // namespace

std::unique_ptr<WorkWatch> make_work_watch(std::shared_ptr<Core> core, Clock& clock,
                                           std::chrono::milliseconds sweep_interval) {
  return std::make_unique<RedisWorkWatch>(std::move(core), clock, sweep_interval);
}

std::unique_ptr<WorkWatch> RedisStore::do_watch_work(const WatchWorkOptions& options) {
  return guard("watch_work",
               [&] { return make_work_watch(core_, clock(), options.sweep_interval); });
}

}  // namespace a2::redis::detail
