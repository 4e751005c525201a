// SPDX-License-Identifier: MIT
// The consumer check shared by test/cmake/find_package and test/cmake/add_subdirectory: one job's round trip on the in-memory store
// and, when linked, the Redis and Postgres entry points. Exits non-zero on any mismatch.

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <a2/a2.hpp>
#ifdef A2_CONSUMER_REDIS
#include <a2/redis.hpp>
#endif
#ifdef A2_CONSUMER_POSTGRES
#include <a2/postgres.hpp>
#endif

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "consumer: FAILED: %s\n", what);
    ++failures;
  }
}

// Calls open() on a port where nothing listens: links the backend and its client library for
// real, and must fail with a2::Unavailable.
template <class Open, class Options>
void expect_unavailable(Open open, const Options& options, const char* what) {
  try {
    auto store = open(options);
    check(false, what);
  } catch (const a2::Error& e) {
    check(e.code() == a2::ErrorCode::store_unavailable && e.retryable(), what);
  }
}

}  // namespace

int main() {
  constexpr std::int64_t kNow = 1'000'000;
  auto clock = std::make_shared<a2::ManualClock>(kNow);
  auto store = a2::memory::open({.clock = clock, .ids = std::make_shared<a2::SequentialIdSource>("c")});
  const std::string session = "consumer:s1";

  a2::NewEvent job;
  job.type = "job";
  job.payload = {{"n", 1}};
  auto appended = store->append(session, {job});
  check(appended.events.size() == 1, "append returns one row");
  check(appended.has_pending, "append reports pending work");
  check(!appended.events.empty() && appended.events[0].index == 1 && appended.events[0].id == "c1" &&
            appended.events[0].created_at == kNow,
        "appended row has index 1, id c1, created_at now");

  a2::ClaimRequest claim;
  claim.session_id = session;
  claim.holder = "worker";
  claim.ttl_ms = 5000;
  auto claimed = store->claim_available(claim);
  check(claimed.verdict == a2::ClaimVerdict::claimed, "claim_available claims");
  check(claimed.events.size() == 1 && claimed.events[0].index == 1 &&
            claimed.events[0].attempt_count == 1 && claimed.events[0].claim_holder == "worker" &&
            claimed.events[0].claim_expires_at == kNow + 5000,
        "claimed row carries attempt 1, holder and lease end");

  a2::ChildEvent reply;
  reply.id = "reply-1";
  reply.type = "reply";
  reply.payload = {{"ok", true}};
  reply.settled = true;
  clock->advance(10);
  auto done = store->complete_attempt(
      {.session_id = session, .index = 1, .attempt = 1, .events = {reply}});
  check(done.verdict == a2::CompleteVerdict::completed, "complete_attempt completes");
  check(done.events.size() == 1 && done.events[0].index == 2 && done.events[0].id == "reply-1" &&
            done.events[0].cause == a2::EventCause{.index = 1, .attempt = 1},
        "the child is event 2 caused by {1, 1}");

  auto rows = store->read(session);
  check(rows.size() == 2, "read returns both events");
  if (rows.size() == 2) {
    check(rows[0].processed_at == kNow + 10 && rows[0].processed_by_attempt == 1 &&
              rows[0].returned_event_ids == std::vector<std::string>{"reply-1"} &&
              !rows[0].claim_holder,
          "the parent is processed by attempt 1 with its child's id");
    check(rows[1].payload == a2::Json{{"ok", true}}, "the child's payload round-trips");
  }
  check(store->claim_available(claim).verdict == a2::ClaimVerdict::settled,
        "nothing is left to claim");
  check(a2::to_string(a2::ClaimVerdict::settled) == "settled", "verdicts have wire words");
  store->close();
  try {
    (void)store->read(session);
    check(false, "a closed store throws");
  } catch (const a2::Unavailable&) {
  }

#ifdef A2_CONSUMER_REDIS
  {
    a2::redis::Options options;
    options.url = "redis://127.0.0.1:1";
    options.connect_timeout = std::chrono::milliseconds(1000);
    expect_unavailable(&a2::redis::open, options, "a2::redis::open without a server throws Unavailable");
  }
#endif
#ifdef A2_CONSUMER_POSTGRES
  {
    a2::postgres::Options options;
    options.connection = "postgresql://a2@127.0.0.1:1/a2?connect_timeout=1";
    expect_unavailable(&a2::postgres::open, options,
                       "a2::postgres::open without a server throws Unavailable");
  }
#endif

  if (failures != 0) return 1;
  std::printf("consumer: ok (a2 %d.%d.%d%s%s)\n", a2::kVersionMajor, a2::kVersionMinor,
              a2::kVersionPatch,
#ifdef A2_CONSUMER_REDIS
              ", redis",
#else
              "",
#endif
#ifdef A2_CONSUMER_POSTGRES
              ", postgres"
#else
              ""
#endif
  );
  return 0;
}
