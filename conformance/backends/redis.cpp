// SPDX-License-Identifier: MIT
// The conformance seam for the Redis backend: one shared redis-server per executable, a new key
// prefix per fixture.
// clang-format off
// First: Catch2 listeners need CATCH_CONFIG_EXTERNAL_INTERFACES at Catch2's first include.
#include "servers/redis_log_listener.hpp"
// clang-format on

#include "a2/redis.hpp"

#include <atomic>
#include <string>

#include "harness.hpp"
#include "servers/redis_server.hpp"

namespace a2::conformance {
namespace {
class RedisBackend final : public Backend {
 public:
  std::string name() const override { return "redis"; }
  Fixture fresh(const StoreSettings& settings) override {
    auto& server = a2::test::RedisServer::shared();
    Fixture f{std::make_shared<ManualClock>(kT0), std::make_shared<SequentialIdSource>("g"),
              nullptr};
    a2::redis::Options options;
    options.url = server.url();
    options.key_prefix = "t" + std::to_string(++counter_);
    options.command_timeout = std::chrono::milliseconds(10000);
    options.clock = f.clock;
    options.ids = store_ids(f, settings);
    options.clear_event_type = settings.clear_event_type;
    options.observe = settings.observe;
    f.store = a2::redis::open(options);
    return f;
  }

 private:
  std::atomic<int> counter_{0};
};
}  // namespace

Backend& backend() {
  static RedisBackend instance;
  return instance;
}
}  // namespace a2::conformance
