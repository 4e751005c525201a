// SPDX-License-Identifier: MIT
#pragma once

// A Catch2 listener that prints the shared redis-server's log when a test run had failures.
// Include it in exactly one source file of a test executable, before anything else that
// includes Catch2 (listeners need CATCH_CONFIG_EXTERNAL_INTERFACES at the first include).

#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>

#include "servers/redis_server.hpp"

namespace a2::test {

class RedisLogListener : public Catch::TestEventListenerBase {
 public:
  using Catch::TestEventListenerBase::TestEventListenerBase;
  void testRunEnded(const Catch::TestRunStats& stats) override {
    if (stats.totals.assertions.failed > 0 || stats.totals.testCases.failed > 0)
      print_shared_redis_log();
  }
};

CATCH_REGISTER_LISTENER(RedisLogListener)

}  // namespace a2::test
