// SPDX-License-Identifier: MIT
// Opening a Redis store: options checked, the server pinged; the store's lifetime.

#include "redis/store.hpp"

#include "a2/detail/validate.hpp"
#include "common/spin_wait.hpp"
#include "redis/feed.hpp"

namespace a2::redis {
namespace detail {

RedisStore::RedisStore(std::shared_ptr<Core> core)
    : Store(core->options.clock, core->options.ids, "redis", core->options.observe),
      core_(std::move(core)) {
  if (core_->options.spin_wait.count() > 0) count_calls_for_spin_wait();
}

RedisStore::~RedisStore() {
  core_->closed.store(true);  // Feeds outliving the store stop too.
  core_->pool.close();
  core_->mux.close();
}

void RedisStore::do_close() {
  core_->closed.store(true);
  core_->pool.close();
  core_->mux.close();
}

std::unique_ptr<Feed> RedisStore::do_subscribe(const std::string& s, std::int64_t after) {
  return guard("subscribe", [&] { return make_feed(core_, s, after); });
}

}  // namespace detail

namespace {

void check_prefix(const std::string& prefix) {
  auto bad = [&](const std::string& why) {
    throw InvalidArgument("a2 redis open: key_prefix '" + prefix + "' " + why);
  };
  if (prefix.empty()) bad("must not be empty");
  if (prefix.size() > 200) bad("is longer than 200 bytes");
  // Keys are "<prefix>:<session>:..." and session ids contain ':', so a prefix with ':' could
  // spell another prefix's keys ("ov" + "x:y" = "ov:x" + "y"); without it the mapping is
  // one-to-one.
  if (prefix.find(':') != std::string::npos) bad("must not contain ':' (the store adds it)");
  for (char ch : prefix)
    if (static_cast<unsigned char>(ch) <= 0x20 || ch == 0x7F)
      bad("must not contain spaces or control characters");
  if (!a2::detail::valid_utf8(prefix)) bad("is not valid UTF-8");
}

}  // namespace

std::unique_ptr<Store> open(const Options& options) {
  auto endpoint = detail::parse_url(options.url);
  check_prefix(options.key_prefix);
  a2::detail::check_clear_event_type("redis open", options.clear_event_type);
  if (options.pool_size == 0) throw InvalidArgument("a2 redis open: pool_size must be >= 1");
  if (options.write_connections > detail::kMaxWriteConnections)
    throw InvalidArgument("a2 redis open: write_connections must be at most " +
                          std::to_string(detail::kMaxWriteConnections));
  if (options.connect_timeout.count() <= 0 || options.command_timeout.count() <= 0)
    throw InvalidArgument("a2 redis open: timeouts must be positive");
  if (options.feed_safety_poll.count() <= 0)
    throw InvalidArgument("a2 redis open: feed_safety_poll must be positive");
  if (options.pool_acquire_timeout && options.pool_acquire_timeout->count() <= 0)
    throw InvalidArgument("a2 redis open: pool_acquire_timeout must be positive");
  a2::detail::check_spin_wait("redis open", options.spin_wait);
  auto core = std::make_shared<detail::Core>(std::move(endpoint), options);
  {
    auto lease = core->acquire("open");
    detail::Reply pong = lease->command("open", {"PING"});
    if (pong.is_error()) detail::fail("open", "PING failed: " + pong.str);
  }
  return std::make_unique<detail::RedisStore>(std::move(core));
}

}  // namespace a2::redis
