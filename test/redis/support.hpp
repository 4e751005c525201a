// SPDX-License-Identifier: MIT
#pragma once

// Helpers of the Redis-only tests: stores on the shared server, and a raw hiredis client to
// inspect keys and subscribe to wake-ups independently of the store's own transport.

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "a2/redis.hpp"
#include "harness.hpp"
#include "servers/redis_server.hpp"
#include "support/support.hpp"

namespace a2::redis_test {

using a2::conformance::Fixture;
using a2::conformance::kT0;

// A unique key prefix per call ("r<tag><n>"): tests share one server.
inline std::string unique_prefix(const std::string& tag) {
  static std::atomic<int> counter{0};
  return "r" + tag + std::to_string(++counter);
}

inline a2::redis::Options options_for(const std::string& url, const std::string& prefix = "a2") {
  a2::redis::Options o;
  o.url = url;
  o.key_prefix = prefix;
  return o;
}

inline Fixture open_fixture(const std::string& prefix, const std::string& url = "",
                            std::size_t pool_size = 4) {
  Fixture f{std::make_shared<ManualClock>(kT0), std::make_shared<SequentialIdSource>("g"), nullptr};
  a2::redis::Options options;
  options.url = url.empty() ? a2::test::RedisServer::shared().url() : url;
  options.key_prefix = prefix;
  options.pool_size = pool_size;
  options.command_timeout = std::chrono::milliseconds(10000);
  options.clock = f.clock;
  options.ids = f.ids;
  f.store = a2::redis::open(options);
  return f;
}

// How far past its timeout a call may end on this (busy, shared) machine.
inline constexpr auto kMargin = std::chrono::milliseconds(750);

// Resumes a paused server however the test leaves.
struct ResumeOnExit {
  a2::test::RedisServer& server;
  ~ResumeOnExit() { server.resume(); }
};

// A thread that waits on a paused server: resumes the server and joins the thread however the
// test leaves.
struct ResumeAndJoin {
  a2::test::RedisServer& server;
  std::thread thread;
  ~ResumeAndJoin() {
    server.resume();
    if (thread.joinable()) thread.join();
  }
};

// One reply of the raw client, freed on destruction.
using RawReply = std::unique_ptr<redisReply, void (*)(void*)>;

// A plain hiredis connection (not the store's transport). Not thread-safe.
class Raw {
 public:
  explicit Raw(int port = a2::test::RedisServer::shared().port()) {
    timeval tv{5, 0};
    context_ = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!context_ || context_->err) throw std::runtime_error("raw redis connect failed");
    redisSetTimeout(context_, tv);
  }
  ~Raw() { redisFree(context_); }
  Raw(const Raw&) = delete;
  Raw& operator=(const Raw&) = delete;

  RawReply cmd(const std::vector<std::string>& argv) {
    std::vector<const char*> p;
    std::vector<std::size_t> l;
    for (const auto& a : argv) {
      p.push_back(a.data());
      l.push_back(a.size());
    }
    void* r = redisCommandArgv(context_, static_cast<int>(argv.size()), p.data(), l.data());
    if (!r) throw std::runtime_error(std::string("raw redis command failed: ") + context_->errstr);
    return RawReply(static_cast<redisReply*>(r), freeReplyObject);
  }
  // A string reply, nullopt for nil.
  std::optional<std::string> get(const std::vector<std::string>& argv) {
    auto r = cmd(argv);
    if (r->type == REDIS_REPLY_NIL) return std::nullopt;
    if (r->type == REDIS_REPLY_INTEGER) return std::to_string(r->integer);
    if (r->type == REDIS_REPLY_ERROR) throw std::runtime_error(std::string(r->str, r->len));
    return std::string(r->str, r->len);
  }
  long long integer(const std::vector<std::string>& argv) {
    auto r = cmd(argv);
    if (r->type != REDIS_REPLY_INTEGER) throw std::runtime_error("not an integer reply");
    return r->integer;
  }
  // A flat array reply of strings (nil -> "").
  std::vector<std::string> list(const std::vector<std::string>& argv) {
    auto r = cmd(argv);
    if (r->type == REDIS_REPLY_ERROR) throw std::runtime_error(std::string(r->str, r->len));
    std::vector<std::string> out;
    for (std::size_t i = 0; i < r->elements; ++i) {
      auto* e = r->element[i];
      out.push_back(e->type == REDIS_REPLY_INTEGER ? std::to_string(e->integer)
                    : e->str                       ? std::string(e->str, e->len)
                                                   : std::string());
    }
    return out;
  }
  // Every key matching a pattern (tests only: KEYS is fine on a test server).
  std::vector<std::string> keys(const std::string& pattern) { return list({"KEYS", pattern}); }

  // Pub/sub: SUBSCRIBE, then next_message() returns each published payload (nullopt on timeout).
  void subscribe(const std::string& channel) {
    auto r = cmd({"SUBSCRIBE", channel});
    REQUIRE(r->type == REDIS_REPLY_ARRAY);
  }
  std::optional<std::string> next_message(std::chrono::milliseconds timeout) {
    timeval tv{static_cast<time_t>(timeout.count() / 1000),
               static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
    redisSetTimeout(context_, tv);
    void* raw = nullptr;
    if (redisGetReply(context_, &raw) != REDIS_OK || !raw) {
      // A timeout breaks a hiredis context: reconnecting is the caller's business.
      return std::nullopt;
    }
    RawReply r(static_cast<redisReply*>(raw), freeReplyObject);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3) return std::nullopt;
    return std::string(r->element[2]->str, r->element[2]->len);
  }

 private:
  redisContext* context_ = nullptr;
};

// The clients connected to the server (the raw client included).
inline long long clients(Raw& raw) {
  auto list = raw.get({"CLIENT", "LIST", "TYPE", "normal"}).value_or("");
  return static_cast<long long>(std::count(list.begin(), list.end(), '\n'));
}

// calls= of one command in INFO commandstats (0 when absent).
inline long long calls_of(Raw& raw, const std::string& command) {
  auto info = raw.get({"INFO", "commandstats"}).value_or("");
  std::istringstream lines(info);
  std::string line;
  const std::string prefix = "cmdstat_" + command + ":calls=";
  while (std::getline(lines, line))
    if (line.rfind(prefix, 0) == 0) return std::stoll(line.substr(prefix.size()));
  return 0;
}

}  // namespace a2::redis_test
