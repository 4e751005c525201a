// SPDX-License-Identifier: MIT
#include "store_url.hpp"

#include <chrono>

#include "a2/clock.hpp"
#include "output.hpp"
#ifdef A2CTL_WITH_REDIS
#include "a2/redis.hpp"
#endif
#ifdef A2CTL_WITH_POSTGRES
#include "a2/postgres.hpp"
#endif

namespace a2ctl {

Backend backend_of(std::string_view url) {
  auto starts = [&](std::string_view p) { return url.substr(0, p.size()) == p; };
  if (starts("redis://") || starts("unix://")) return Backend::redis;
  if (starts("postgres://") || starts("postgresql://")) return Backend::postgres;
  // A libpq key=value string: "host=/tmp port=5432 dbname=app".
  if (url.find("://") == std::string_view::npos && url.find('=') != std::string_view::npos)
    return Backend::postgres;
  if (url.empty()) throw UsageError("no store: pass --store URL or set A2_STORE");
  throw UsageError("unrecognized store URL '" + std::string(url) +
                   "': expected redis://, unix://, postgres://, postgresql:// or a libpq "
                   "key=value string");
}

std::unique_ptr<a2::Store> open_store(const Globals& globals, std::optional<std::int64_t> now_ms) {
  const Backend backend = backend_of(globals.store_url);
  std::shared_ptr<a2::Clock> clock;
  if (now_ms) clock = std::make_shared<a2::ManualClock>(*now_ms);
  if (backend == Backend::redis) {
#ifdef A2CTL_WITH_REDIS
    a2::redis::Options o;
    o.url = globals.store_url;
    o.key_prefix = globals.prefix;
    o.pool_size = 2;
    o.clock = clock;
    return a2::redis::open(o);
#else
    throw UsageError("this a2ctl was built without the Redis backend");
#endif
  }
#ifdef A2CTL_WITH_POSTGRES
  a2::postgres::Options o;
  o.connection = globals.store_url;
  o.schema = globals.schema;
  o.pool_size = 2;
  o.clock = clock;
  return a2::postgres::open(o);
#else
  throw UsageError("this a2ctl was built without the Postgres backend");
#endif
}

a2::Store& Context::store() {
  if (!store_)
    store_ = open_store(globals, globals.now.empty() ? std::nullopt : std::optional(now_ms()));
  return *store_;
}

std::int64_t Context::now_ms() {
  if (!now_) {
    if (!globals.now.empty()) {
      now_ = parse_time(globals.now);
      if (!now_) throw UsageError("--now '" + globals.now + "' is not a time (ms or ISO-8601 UTC)");
    } else {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
          .count();
    }
  }
  return *now_;
}

}  // namespace a2ctl
