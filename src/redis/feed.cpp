// SPDX-License-Identifier: MIT
// The live feed of the Redis store (docs/redis-layout.md#live-feeds).

#include "redis/feed.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "a2/detail/json_text.hpp"
#include "redis/codec.hpp"
#include "redis/errors.hpp"
#include "redis/store.hpp"

namespace a2::redis::detail {
namespace {

constexpr auto kFeedWaitSlice = std::chrono::milliseconds(50);  // cancel()/close() latency.

// SUBSCRIBEs to the session's notify channel on its own connection before the first catch-up
// read, so no wake-up published after that read is missed. A wake-up whose first entry is
// cursor+1 is applied as is; any other wake-up beyond the cursor, and the safety poll, trigger an
// XRANGE catch-up. Waits in short slices so cancel() and close() take effect promptly.
class RedisFeed final : public Feed {
 public:
  RedisFeed(std::shared_ptr<Core> core, std::string session_id, std::int64_t after)
      : core_(std::move(core)), session_(std::move(session_id)), cursor_(after) {
    subscriber_ = subscribe_connection(core_->options.command_timeout);
    last_poll_ = std::chrono::steady_clock::now();
  }

  std::vector<Event> next(std::chrono::milliseconds timeout) override {
    constexpr std::string_view op = "feed";
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const auto poll = std::max(core_->options.feed_safety_poll, std::chrono::milliseconds(1));
    try {
      for (;;) {
        if (cancelled_.load()) return {};
        if (core_->closed.load()) fail(op, "the store is closed");
        auto now = std::chrono::steady_clock::now();
        if (!subscriber_ && now >= resubscribe_at_) resubscribe(deadline);
        now = std::chrono::steady_clock::now();
        if (catch_up_ || now >= last_poll_ + poll) {
          const bool by_poll = !catch_up_;
          // A failed read throws (the feed stays usable: the next call reads again).
          auto page = RedisStore::feed_page(*core_, session_, cursor_.load());
          if (by_poll && !page.empty())
            observer_.log(LogLevel::info, "safety_poll_catch_up",
                          "a2 redis feed: the safety poll found " + std::to_string(page.size()) +
                              " event(s) of session '" + session_ + "' no wake-up announced");
          catch_up_ = false;
          last_poll_ = now;
          if (!page.empty()) {
            // A full page may have more behind it.
            catch_up_ = static_cast<std::int64_t>(page.size()) == kFeedPageSize;
            std::vector<Event> out;
            out.reserve(page.size());
            for (auto& row : page) out.push_back(to_event(row));
            cursor_.store(out.back().index);
            return out;
          }
        }
        now = std::chrono::steady_clock::now();
        if (now >= deadline) return {};
        auto until = std::min(deadline, last_poll_ + poll);
        if (!subscriber_) until = std::min(until, resubscribe_at_);
        auto slice = std::max(
            std::chrono::duration_cast<std::chrono::milliseconds>(
                std::min<std::chrono::steady_clock::duration>(until - now, kFeedWaitSlice)),
            std::chrono::milliseconds(1));
        if (!subscriber_) {
          std::this_thread::sleep_for(slice);
          continue;
        }
        std::optional<Reply> message;
        try {
          message = subscriber_->receive(op, slice);
        } catch (const Unavailable&) {
          // The subscription's connection was lost (a restart, CLIENT KILL): subscribe again
          // at once; wake-ups meanwhile are lost, so catch up once it is back.
          subscriber_.reset();
          resubscribe_at_ = now;
          continue;
        }
        if (!message) continue;
        if (auto events = apply(*message)) return std::move(*events);
      }
    } catch (...) {
      translate_current(op);
    }
  }

  void cancel() noexcept override { cancelled_.store(true); }
  bool cancelled() const noexcept override { return cancelled_.load(); }
  std::int64_t cursor() const noexcept override { return cursor_.load(); }

 private:
  Event to_event(SerializedEvent& row) {
    Event e;
    e.session_id = session_;
    e.index = row.index;
    e.id = std::move(row.id);
    e.type = std::move(row.type);
    try {
      e.payload = a2::detail::parse_stored_json(row.payload_json);
    } catch (const Json::exception&) {
      unexpected("feed", "the payload of event " + std::to_string(row.index) + " is not JSON");
    }
    e.created_at = row.created_at;
    return e;
  }

  // A wake-up {"f":F,"t":T,"e":[[index,id,type,payload],...]} or {"f":F}. Returns the events to
  // deliver when it continues the cursor; otherwise schedules a catch-up if it is beyond it.
  std::optional<std::vector<Event>> apply(const Reply& message) {
    if (!message.is_array() || message.size() != 3 || message[0].str != "message")
      return std::nullopt;
    Json wake;
    try {
      wake = a2::detail::parse_stored_json(message[2].str, a2::detail::kEnvelopeLevels);
    } catch (const Json::exception&) {
      catch_up_ = true;  // Unreadable: the read path is the authority.
      return std::nullopt;
    }
    const std::int64_t cursor = cursor_.load();
    try {
      const std::int64_t frontier = wake.at("f").get<std::int64_t>();
      if (frontier <= cursor) return std::nullopt;
      if (wake.contains("e") && wake["e"].is_array() && !wake["e"].empty() &&
          wake["e"][0].at(0).get<std::int64_t>() == cursor + 1) {
        const std::int64_t created = wake.at("t").get<std::int64_t>();
        std::vector<Event> out;
        for (const auto& entry : wake["e"]) {
          Event e;
          e.session_id = session_;
          e.index = entry.at(0).get<std::int64_t>();
          e.id = entry.at(1).get<std::string>();
          e.type = entry.at(2).get<std::string>();
          e.payload = entry.at(3);
          e.created_at = created;
          if (e.index != cursor + 1 + static_cast<std::int64_t>(out.size())) {
            catch_up_ = true;
            return std::nullopt;
          }
          out.push_back(std::move(e));
        }
        cursor_.store(out.back().index);
        if (out.back().index < frontier) catch_up_ = true;
        return out;
      }
      catch_up_ = true;
    } catch (const Json::exception&) {
      catch_up_ = true;
    }
    return std::nullopt;
  }

  // A new connection SUBSCRIBEd to the session's channel, confirmed within `timeout`.
  std::unique_ptr<Connection> subscribe_connection(std::chrono::milliseconds timeout) {
    constexpr std::string_view op = "subscribe";
    auto c = core_->pool.connect_dedicated(std::chrono::steady_clock::now() +
                                           core_->options.connect_timeout);
    c->send(op, {"SUBSCRIBE", core_->keys.notify(session_)});
    auto confirmation = c->receive(op, timeout);
    if (!confirmation) fail(op, "SUBSCRIBE timed out");
    if (confirmation->is_error()) fail(op, confirmation->str);
    if (!confirmation->is_array() || confirmation->size() < 1 ||
        (*confirmation)[0].str != "subscribe")
      unexpected(op, "SUBSCRIBE was not confirmed");
    return c;
  }

  // Subscribes again after the connection was lost; on failure, tries again after a backoff
  // that doubles from kResubscribeMin up to the safety poll (at most kResubscribeMax). The
  // safety poll delivers meanwhile.
  void resubscribe(std::chrono::steady_clock::time_point next_deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        next_deadline - std::chrono::steady_clock::now());
    try {
      subscriber_ = subscribe_connection(std::clamp(
          left, kResubscribeMin, std::max(core_->options.command_timeout, kResubscribeMin)));
      resubscribe_backoff_ = kResubscribeMin;
      catch_up_ = true;
    } catch (const Error&) {
      subscriber_.reset();
      resubscribe_at_ = std::chrono::steady_clock::now() + resubscribe_backoff_;
      resubscribe_backoff_ =
          std::min({resubscribe_backoff_ * 2,
                    std::max(core_->options.feed_safety_poll, kResubscribeMin), kResubscribeMax});
    }
  }

  std::shared_ptr<Core> core_;
  std::string session_;
  std::atomic<std::int64_t> cursor_;
  std::atomic<bool> cancelled_{false};
  std::unique_ptr<Connection> subscriber_;  // Null while the subscription is lost.
  std::chrono::steady_clock::time_point resubscribe_at_;
  std::chrono::milliseconds resubscribe_backoff_ = kResubscribeMin;
  bool catch_up_ = true;
  const a2::detail::CapturedObserver observer_ = a2::detail::CapturedObserver::current();
  std::chrono::steady_clock::time_point last_poll_;
};

}  // namespace

std::unique_ptr<Feed> make_feed(std::shared_ptr<Core> core, std::string session_id,
                                std::int64_t after) {
  return std::make_unique<RedisFeed>(std::move(core), std::move(session_id), after);
}

}  // namespace a2::redis::detail
