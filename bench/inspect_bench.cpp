// SPDX-License-Identifier: MIT
// The cost of the operating reads behind a2ctl (docs/operating.md): list_sessions over every
// session (pages of 1000, the walk of `a2ctl sessions`) and inspect_session of one session
// (`a2ctl inspect`), on Redis and Postgres with 10,000 sessions of 3 events (one of them
// unsettled work). Each backend runs on a server this program starts (a2_test_servers).
//
//   a2_inspect_bench [sessions = 10000] [walks = 5]
//
// Prints a markdown table (bench/RESULTS.md, "Operating reads").

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "a2/postgres.hpp"
#include "a2/redis.hpp"
#include "servers/postgres_server.hpp"
#include "servers/redis_server.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void fill(a2::Store& store, int sessions) {
  std::vector<a2::NewEvent> events(3);
  for (int i = 0; i < 3; ++i) {
    events[i].type = "bench.event";
    events[i].payload = a2::Json{{"n", i}};
    events[i].settled = i < 2;  // Two facts and one unit of work.
  }
  for (int s = 0; s < sessions; ++s) (void)store.append("ops-" + std::to_string(s), events);
}

void measure(const char* backend, a2::Store& store, int sessions, int walks) {
  std::vector<double> walk_ms, page_counts, inspect_us;
  for (int w = 0; w < walks; ++w) {
    const auto start = Clock::now();
    std::set<std::string> seen;  // a2ctl sorts and dedupes (Redis pages may repeat a session).
    a2::ListSessionsRequest request;
    request.limit = 1000;
    int pages = 0;
    do {
      auto page = store.list_sessions(request);
      ++pages;
      for (auto& s : page.sessions) seen.insert(s.session_id);
      request.cursor = page.next_cursor;
    } while (!request.cursor.empty());
    walk_ms.push_back(ms_since(start));
    page_counts.push_back(pages);
    if (static_cast<int>(seen.size()) != sessions) {
      std::fprintf(stderr, "%s: the walk found %zu sessions, not %d\n", backend, seen.size(),
                   sessions);
      std::exit(1);
    }
  }
  for (int i = 0; i < 200; ++i) {
    const auto start = Clock::now();
    auto inspection = store.inspect_session("ops-" + std::to_string(i * 37 % sessions));
    inspect_us.push_back(ms_since(start) * 1000);
    if (inspection.summary.head != 3) {
      std::fprintf(stderr, "%s: inspect_session saw head %lld\n", backend,
                   static_cast<long long>(inspection.summary.head));
      std::exit(1);
    }
  }
  std::printf("| %s | %d | %.0f | %.1f | %.1f | %.0f |\n", backend, sessions, median(page_counts),
              median(walk_ms), median(walk_ms) * 1000 / sessions, median(inspect_us));
}

}  // namespace

int main(int argc, char** argv) {
  const int sessions = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int walks = argc > 2 ? std::atoi(argv[2]) : 5;
  std::printf(
      "| backend | sessions | pages (limit 1000) | list_sessions walk ms (median of %d) | "
      "µs per session | inspect_session µs (median of 200) |\n| --- | ---: | ---: | ---: | ---: "
      "| ---: |\n",
      walks);
  {
    a2::test::RedisServer server;
    a2::redis::Options options;
    options.url = server.url();
    auto store = a2::redis::open(options);
    fill(*store, sessions);
    measure("redis", *store, sessions, walks);
  }
  {
    a2::test::PostgresServer server;
    a2::postgres::Options options;
    options.connection = server.connection();
    auto store = a2::postgres::open(options);
    fill(*store, sessions);
    measure("postgres", *store, sessions, walks);
  }
  return 0;
}
