// SPDX-License-Identifier: MIT
// The Redis backend: every write is one Lua script run by SHA (docs/redis-layout.md#scripts),
// reads are pipelined XRANGE/HMGET pages (docs/redis-layout.md#reads) with the range-gap retry
// (docs/redis-layout.md#range-gaps), live feeds combine pub/sub wake-ups with XRANGE catch-up
// (docs/redis-layout.md#live-feeds).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "a2/detail/constants.hpp"
#include "a2/detail/json_text.hpp"
#include "a2/detail/rows.hpp"
#include "a2/embedded/lua_scripts.hpp"
#include "a2/redis.hpp"
#include "redis/client.hpp"
#include "redis/codec.hpp"
#include "redis/keys.hpp"
#include "redis/test_hooks.hpp"

namespace a2::redis {
namespace {

using a2::detail::EmbeddedText;
using detail::Argv;
using detail::Connection;
using detail::Reply;

using a2::detail::kFeedPageSize;
using a2::detail::kReadPageSize;
constexpr std::int64_t kReadConcurrency = 16;  // Pages per pipelined round trip.
// Presence entries written by this library carry this source tag (docs/redis-layout.md#presence).
constexpr std::string_view kPresenceSource = "a2-cpp";
constexpr auto kFeedWaitSlice = std::chrono::milliseconds(50);  // cancel()/close() latency.
// A feed that lost its subscription subscribes again after a backoff between these.
constexpr auto kResubscribeMin = std::chrono::milliseconds(50);
constexpr auto kResubscribeMax = std::chrono::milliseconds(5000);

std::string str(std::int64_t v) { return std::to_string(v); }

std::string session_text(const std::string& s) { return "session '" + s + "'"; }

// A read met a gap: a clear moved the log while the read ran
// (docs/redis-layout.md#range-gaps). Still a store_unavailable
// when it escapes; retry_after_gap() retries the whole read once.
class RangeGap : public Unavailable {
 public:
  using Unavailable::Unavailable;
};

template <class F>
auto retry_after_gap(F&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const RangeGap&) {
  }
  try {
    return read();
  } catch (const RangeGap& second) {
    throw Unavailable(second.what());  // A second gap: plain, retryable.
  }
}

// The deadline of the store call running on this thread (set by RedisStore::guard), so that
// every connection a call acquires counts against the one deadline.
thread_local std::optional<a2::detail::SteadyTime> t_call_deadline;

// Sets the thread's call deadline for its lifetime, unless an outer call set one.
class CallDeadline {
 public:
  explicit CallDeadline(std::chrono::milliseconds timeout) : owner_(!t_call_deadline) {
    if (owner_) t_call_deadline = std::chrono::steady_clock::now() + timeout;
  }
  ~CallDeadline() {
    if (owner_) t_call_deadline.reset();
  }
  CallDeadline(const CallDeadline&) = delete;
  CallDeadline& operator=(const CallDeadline&) = delete;

 private:
  bool owner_;
};

// What a store and its feeds share; outlives the store while a feed holds it.
struct Core {
  Core(detail::Endpoint endpoint, const Options& o)
      : options(o),
        keys{o.key_prefix},
        pool("redis", o.pool_size, o.pool_acquire_timeout.value_or(o.command_timeout),
             [endpoint = std::move(endpoint), connect_timeout = o.connect_timeout,
              command_timeout = o.command_timeout](a2::detail::SteadyTime deadline) {
               // Connecting and its AUTH/SELECT count against the call's deadline too.
               auto left = std::max(std::chrono::ceil<std::chrono::milliseconds>(
                                        deadline - std::chrono::steady_clock::now()),
                                    std::chrono::milliseconds(1));
               return std::make_unique<Connection>(endpoint, std::min(connect_timeout, left),
                                                   std::min(command_timeout, left));
             }) {}

  // A pooled connection for the calling thread's store call: its wait and every command it
  // sends end by the call's deadline (command_timeout from the call's start).
  detail::Pool::Lease acquire(std::string_view op) {
    const auto deadline =
        t_call_deadline.value_or(std::chrono::steady_clock::now() + options.command_timeout);
    auto lease = pool.acquire(op, deadline);
    lease->set_deadline(deadline);
    return lease;
  }

  Options options;
  detail::Keys keys;
  detail::Pool pool;
  std::atomic<bool> closed{false};
};

// Runs a script by SHA. On NOSCRIPT (the server's script cache was flushed or restarted) it loads
// the text and retries once: the one place script text is ever sent. An error reply (a Lua error)
// is a store failure.
Reply run_script(Connection& c, std::string_view op, const EmbeddedText& script, const Argv& keys,
                 const Argv& args) {
  Argv argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.emplace_back("EVALSHA");
  argv.emplace_back(script.sha1);
  argv.push_back(str(static_cast<std::int64_t>(keys.size())));
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  Reply reply = c.command(op, argv);
  if (reply.is_error() && reply.str.rfind("NOSCRIPT", 0) == 0) {
    Reply loaded = c.command(op, {"SCRIPT", "LOAD", std::string(script.text)});
    if (loaded.is_error())
      throw Unavailable("a2 redis " + std::string(op) + ": SCRIPT LOAD " +
                        std::string(script.name) + " failed: " + loaded.str);
    if (loaded.str != script.sha1)
      throw Unavailable("a2 redis " + std::string(op) + ": the server hashed script " +
                        std::string(script.name) + " to " + loaded.str + ", not " +
                        std::string(script.sha1));
    reply = c.command(op, argv);
  }
  if (reply.is_error())
    throw Unavailable("a2 redis " + std::string(op) + ": script " + std::string(script.name) +
                      " failed: " + reply.str);
  return reply;
}

void check_replies(std::string_view op, const std::vector<Reply>& replies) {
  for (const auto& r : replies)
    if (r.is_error()) throw Unavailable("a2 redis " + std::string(op) + ": " + r.str);
}

// A stored count/split/boundary: absent = 0; else a safe non-negative integer (4).
std::int64_t stored_index(std::string_view op, const Reply& r, const std::string& session_id,
                          const char* name) {
  if (r.is_nil()) return 0;
  std::optional<std::int64_t> v;
  if (r.type == Reply::Type::integer)
    v = r.integer;
  else if (r.is_string()) {
    bool digits = !r.str.empty() && r.str.size() <= 16;
    for (char ch : r.str) digits = digits && ch >= '0' && ch <= '9';
    if (digits) v = detail::parse_integer(r.str);
  }
  if (!v || *v < 0 || *v > kMaxSafeInteger)
    throw Unavailable("a2 " + std::string(op) + ": redis " + name + " for " +
                      session_text(session_id) + " is invalid");
  return *v;
}

struct Bounds {
  std::int64_t frontier = 0;
  std::int64_t split = 0;
  std::int64_t clear = 0;
};

// One replayable row request: what a retried append or completion must match (Q6).
struct Requested {
  std::string id;
  std::string type;
  std::optional<std::string> lane;
  std::optional<EventCause> cause;
};

class RedisFeed;

class RedisStore final : public Store {
 public:
  explicit RedisStore(std::shared_ptr<Core> core)
      : Store(core->options.clock, core->options.ids), core_(std::move(core)) {}
  ~RedisStore() override {
    core_->closed.store(true);  // Feeds outliving the store stop too.
    core_->pool.close();
  }

 protected:
  AppendResult do_append(const std::string& s, std::vector<NewEvent> events,
                         const AppendOptions& options) override;
  std::vector<StoredEvent> do_read(const std::string& s, const ReadOptions& o) override {
    return guard("read", [&] {
      return retry_after_gap(
          [&] { return read_stored_range("read", s, o.after_index, o.through_index).first; });
    });
  }
  std::vector<Event> do_read_history(const std::string& s, const ReadOptions& o) override;
  std::optional<std::vector<Event>> do_read_tail(const std::string& s, std::int64_t from,
                                                 std::optional<std::int64_t> through) override;
  std::vector<Event> do_read_events(const std::string& s, std::int64_t after) override {
    return guard("read_events", [&] {
      auto lease = core_->acquire("read_events");
      Reply r = lease->command("read_events", {"XRANGE", k().log(s), str(after + 1) + "-0", "+",
                                               "COUNT", str(kReadPageSize)});
      return events_of("read_events", s, r);
    });
  }
  std::vector<SerializedEvent> do_read_feed_page(const std::string& s,
                                                 std::int64_t after) override {
    return guard("read_feed_page", [&] { return feed_page(*core_, s, after); });
  }
  ClaimResult do_claim_available(const ClaimRequest& request) override;
  RenewResult do_renew_claims(const RenewRequest& request) override;
  CompleteResult do_complete_attempt(const CompleteRequest& request) override;
  FailResult do_fail_attempt(const FailRequest& request) override;
  std::vector<StoredEvent> do_dead_letters(const std::string& s) override;
  RedriveResult do_redrive(const RedriveRequest& request) override;
  StateResult do_read_state(const std::string& s, const std::string& reducer,
                            const StateOptions& options) override;
  std::vector<StateResult> do_read_states(const std::string& reducer,
                                          const std::vector<StateRequest>& requests) override {
    std::vector<StateResult> out;
    out.reserve(requests.size());
    for (const auto& r : requests)
      out.push_back(do_read_state(
          r.session_id, reducer,
          {.through_index = r.through_index, .snapshot_through_index = r.snapshot_through_index}));
    return out;
  }
  void do_put_snapshots(const std::string& s, const std::string& reducer,
                        std::vector<SnapshotWrite> writes) override;
  ClearResult do_clear(const ClearRequest& request) override;
  ReclaimResult do_reclaim(const std::string& s) override;
  std::unique_ptr<Feed> do_subscribe(const std::string& s, std::int64_t after) override;
  PresenceMap do_patch_presence(const std::string& s, const PresencePatch& patch) override;
  PresenceMap do_read_presence(const std::string& s) override;
  void do_close() override {
    core_->closed.store(true);
    core_->pool.close();
  }

 public:
  static std::vector<SerializedEvent> feed_page(Core& core, const std::string& s,
                                                std::int64_t after) {
    auto lease = core.acquire("read_feed_page");
    Reply r = lease->command("read_feed_page", {"XRANGE", core.keys.log(s), str(after + 1) + "-0",
                                                "+", "COUNT", str(kFeedPageSize)});
    if (r.is_error()) throw Unavailable("a2 redis read_feed_page: " + r.str);
    if (!r.is_array()) detail::unexpected("read_feed_page", "expected an array");
    std::vector<SerializedEvent> out;
    out.reserve(r.size());
    for (const auto& entry : r.elements)
      out.push_back(detail::to_serialized_event("read_feed_page", s, entry));
    return out;
  }

 private:
  const detail::Keys& k() const { return core_->keys; }

  // The seeds' `wrap`: a2::Error passes through; anything else unexpected is store_unavailable.
  template <class F>
  auto guard(std::string_view op, F&& f) -> decltype(f()) {
    CallDeadline deadline(core_->options.command_timeout);
    try {
      return f();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Unavailable("a2 redis " + std::string(op) + ": " + e.what());
    }
  }

  // Decodes the reply of a script that may have changed the store. The decoders accept every
  // shape the original package's data gives (codec.hpp); should one still fail, the change may
  // have happened, so the caller hears outcome unknown, never a plain failure.
  template <class F>
  static auto after_script(std::string_view op, F&& decode) -> decltype(decode()) {
    try {
      return decode();
    } catch (const Unavailable& e) {
      if (e.outcome_unknown()) throw;
      throw Unavailable(std::string(e.what()) + " (after the script ran: outcome unknown)", true);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Unavailable(
          "a2 redis " + std::string(op) +
              ": unreadable reply after the script ran (outcome unknown): " + e.what(),
          true);
    }
  }

  Reply script(std::string_view op, const EmbeddedText& text, const Argv& keys, const Argv& args) {
    auto lease = core_->acquire(op);
    return run_script(*lease, op, text, keys, args);
  }

  static std::vector<Event> events_of(std::string_view op, const std::string& s, const Reply& r) {
    if (r.is_error()) throw Unavailable("a2 redis " + std::string(op) + ": " + r.str);
    if (!r.is_array()) detail::unexpected(op, "expected an array");
    std::vector<Event> out;
    out.reserve(r.size());
    for (const auto& entry : r.elements) out.push_back(detail::to_event(op, s, entry));
    return out;
  }

  Bounds read_bounds(Connection& c, std::string_view op, const std::string& s) {
    Reply r = c.command(op, {"MGET", k().count(s), k().meta_split(s), k().clear(s)});
    if (r.is_error()) throw Unavailable("a2 redis " + std::string(op) + ": " + r.str);
    if (!r.is_array() || r.size() != 3) detail::unexpected(op, "bad MGET reply");
    Bounds b;
    b.frontier = stored_index(op, r[0], s, "event count");
    b.split = r[1].is_nil() ? b.frontier : stored_index(op, r[1], s, "metadata split");
    b.clear = stored_index(op, r[2], s, "clear boundary");
    return b;
  }

  // read()'s rows with the boundary they start at (readBoundedRange). Throws RangeGap.
  std::pair<std::vector<StoredEvent>, std::int64_t> read_stored_range(
      std::string_view op, const std::string& s, std::int64_t after,
      std::optional<std::int64_t> through);
  // Public events after..through (readEventRange). Throws RangeGap.
  std::vector<Event> read_event_range(Connection& c, std::string_view op, const std::string& s,
                                      std::int64_t after, std::int64_t through);

  // Matches a replay's stored rows to the request (Q6).
  static void match_replay(std::string_view op, const std::string& s,
                           const std::vector<Requested>& wanted,
                           const std::vector<StoredEvent>& rows) {
    bool ok = rows.size() == wanted.size();
    for (std::size_t i = 0; ok && i < rows.size(); ++i) {
      const auto& r = rows[i];
      const auto& w = wanted[i];
      ok = r.id == w.id && r.type == w.type && r.lane == w.lane && r.cause == w.cause &&
           (i == 0 || r.index == rows[i - 1].index + 1);
    }
    if (!ok)
      throw PartialDuplicateBatch("a2 " + std::string(op) +
                                  ": the retried batch does not match the events stored in " +
                                  session_text(s));
  }

  std::shared_ptr<Core> core_;
};

// ── Reads ──────────────────────────────────────────────────────────────────────────────────

std::pair<std::vector<StoredEvent>, std::int64_t> RedisStore::read_stored_range(
    std::string_view op, const std::string& s, std::int64_t after,
    std::optional<std::int64_t> through) {
  if (through && *through <= after) return {{}, 0};
  auto lease = core_->acquire(op);
  Bounds b = read_bounds(*lease, op, s);
  detail::run_test_hook("read_bounds", s);
  const std::int64_t frontier = std::min(through.value_or(b.frontier), b.frontier);
  const std::int64_t first = std::max(after, b.clear - 1) + 1;  // Reads start at the marker.
  std::vector<StoredEvent> rows;
  if (frontier < first) return {std::move(rows), b.clear};
  rows.reserve(static_cast<std::size_t>(frontier - first + 1));

  struct Lookup {
    std::size_t reply;  // Index of its HMGET reply.
    std::vector<std::int64_t> indexes;
  };
  struct Page {
    std::int64_t first, last;
    std::size_t xrange;
    std::vector<Lookup> lookups;
  };
  std::int64_t next = first;
  while (next <= frontier) {
    // Up to kReadConcurrency pages per round trip: each page is one XRANGE plus one HMGET per
    // metadata hash its (dense, hence predictable) indexes live in.
    std::vector<Argv> commands;
    std::vector<Page> pages;
    for (std::int64_t p = 0; p < kReadConcurrency && next <= frontier; ++p) {
      Page page{next, std::min(next + kReadPageSize - 1, frontier), commands.size(), {}};
      commands.push_back({"XRANGE", k().log(s), str(page.first) + "-0", str(page.last) + "-0",
                          "COUNT", str(kReadPageSize)});
      std::map<std::string, std::size_t> by_key;
      for (std::int64_t i = page.first; i <= page.last; ++i) {
        std::string key = i <= b.split ? k().meta(s) : k().meta_chunk(s, i);
        auto [it, added] = by_key.try_emplace(key, page.lookups.size());
        if (added) page.lookups.push_back({0, {}});
        page.lookups[it->second].indexes.push_back(i);
      }
      for (auto& [key, at] : by_key) {
        auto& lookup = page.lookups[at];
        Argv hmget{"HMGET", key};
        hmget.reserve(2 + lookup.indexes.size() * detail::kMetaSuffixes.size());
        for (auto i : lookup.indexes)
          for (const char* suffix : detail::kMetaSuffixes) hmget.push_back(str(i) + ":" + suffix);
        lookup.reply = commands.size();
        commands.push_back(std::move(hmget));
      }
      pages.push_back(std::move(page));
      next = pages.back().last + 1;
    }
    auto replies = lease->pipeline(op, commands);  // Every reply is read before any check.
    check_replies(op, replies);
    for (const auto& page : pages) {
      const Reply& entries = replies[page.xrange];
      if (!entries.is_array()) detail::unexpected(op, "XRANGE did not return an array");
      const auto expected = static_cast<std::size_t>(page.last - page.first + 1);
      if (entries.size() == 0)
        throw RangeGap("a2 " + std::string(op) + ": redis event range for " + session_text(s) +
                       " ended before index " + str(frontier));
      for (std::size_t at = 0; at < entries.size(); ++at) {
        StoredEvent e = detail::to_stored_event(op, s, entries[at]);
        if (e.index != page.first + static_cast<std::int64_t>(at))
          throw RangeGap("a2 " + std::string(op) + ": redis event range for " + session_text(s) +
                         " is not contiguous");
        rows.push_back(std::move(e));
      }
      if (entries.size() != expected)
        throw RangeGap("a2 " + std::string(op) + ": redis event range for " + session_text(s) +
                       " ended before index " + str(frontier));
      // Join the metadata columns.
      std::size_t base = rows.size() - expected;
      for (const auto& lookup : page.lookups) {
        const Reply& values = replies[lookup.reply];
        if (!values.is_array() ||
            values.size() != lookup.indexes.size() * detail::kMetaSuffixes.size())
          detail::unexpected(op, "bad HMGET reply");
        for (std::size_t n = 0; n < lookup.indexes.size(); ++n) {
          std::array<const Reply*, 13> columns{};
          for (std::size_t c = 0; c < 13; ++c) columns[c] = &values[n * 13 + c];
          auto& row = rows[base + static_cast<std::size_t>(lookup.indexes[n] - page.first)];
          detail::apply_columns(op, row, columns);
        }
      }
    }
  }
  return {std::move(rows), b.clear};
}

std::vector<Event> RedisStore::read_event_range(Connection& c, std::string_view op,
                                                const std::string& s, std::int64_t after,
                                                std::int64_t through) {
  std::vector<Event> events;
  if (through <= after) return events;
  events.reserve(static_cast<std::size_t>(through - after));
  std::int64_t next = after + 1;
  while (next <= through) {
    std::vector<Argv> commands;
    std::vector<std::pair<std::int64_t, std::int64_t>> pages;
    for (std::int64_t p = 0; p < kReadConcurrency && next <= through; ++p) {
      std::int64_t last = std::min(next + kReadPageSize - 1, through);
      commands.push_back(
          {"XRANGE", k().log(s), str(next) + "-0", str(last) + "-0", "COUNT", str(kReadPageSize)});
      pages.emplace_back(next, last);
      next = last + 1;
    }
    auto replies = c.pipeline(op, commands);
    check_replies(op, replies);
    for (std::size_t p = 0; p < pages.size(); ++p) {
      auto page = events_of(op, s, replies[p]);
      if (page.empty())
        throw RangeGap("a2 " + std::string(op) + ": redis event range for " + session_text(s) +
                       " ended before index " + str(through));
      for (std::size_t at = 0; at < page.size(); ++at)
        if (page[at].index != pages[p].first + static_cast<std::int64_t>(at) ||
            page[at].index > through)
          throw RangeGap("a2 " + std::string(op) + ": redis event range for " + session_text(s) +
                         " is not contiguous");
      if (static_cast<std::int64_t>(page.size()) != pages[p].second - pages[p].first + 1)
        throw RangeGap("a2 " + std::string(op) + ": redis event range for " + session_text(s) +
                       " ended before index " + str(through));
      for (auto& e : page) events.push_back(std::move(e));
    }
  }
  return events;
}

std::vector<Event> RedisStore::do_read_history(const std::string& s, const ReadOptions& o) {
  constexpr std::string_view op = "read_history";
  return guard(op, [&] {
    return retry_after_gap([&] {
      auto lease = core_->acquire(op);
      Reply r = lease->command(op, {"MGET", k().count(s), k().clear(s)});
      if (r.is_error()) throw Unavailable("a2 redis read_history: " + r.str);
      if (!r.is_array() || r.size() != 2) detail::unexpected(op, "bad MGET reply");
      std::int64_t frontier = stored_index(op, r[0], s, "event count");
      std::int64_t clear = stored_index(op, r[1], s, "clear boundary");
      detail::run_test_hook("read_bounds", s);
      return read_event_range(*lease, op, s, std::max(o.after_index, clear - 1),
                              std::min(o.through_index.value_or(frontier), frontier));
    });
  });
}

std::optional<std::vector<Event>> RedisStore::do_read_tail(const std::string& s, std::int64_t from,
                                                           std::optional<std::int64_t> through) {
  constexpr std::string_view op = "read_tail";
  return guard(op, [&]() -> std::optional<std::vector<Event>> {
    auto lease = core_->acquire(op);
    Reply r = lease->command(op, {"XREVRANGE", k().log(s), through ? str(*through) + "-0" : "+",
                                  str(from) + "-0", "COUNT", str(kReadPageSize)});
    auto page = events_of(op, s, r);
    std::reverse(page.begin(), page.end());
    for (std::size_t at = 1; at < page.size(); ++at)
      if (page[at].index != page[at - 1].index + 1)
        throw Unavailable("a2 read_tail: redis event range for " + session_text(s) +
                          " is not contiguous");
    if (page.empty() || page.front().index <= from) return page;
    return std::nullopt;
  });
}

// ── Append ─────────────────────────────────────────────────────────────────────────────────

AppendResult RedisStore::do_append(const std::string& s, std::vector<NewEvent> events,
                                   const AppendOptions& options) {
  constexpr std::string_view op = "append";
  return guard(op, [&] {
    const std::int64_t now = clock().now_ms();
    const auto n = static_cast<std::int64_t>(events.size());
    Argv keys{k().log(s),     k().count(s), k().meta(s),
              k().pending(s), k().ready(s), k().meta_split(s)};
    Argv args{s, str(now), str(n)};
    keys.reserve(keys.size() + events.size());
    args.reserve(5 + events.size() * 6);
    std::vector<std::string> payloads;
    payloads.reserve(events.size());
    for (const auto& e : events) {
      keys.push_back(k().id(*e.id));
      payloads.push_back(a2::detail::json_text(e.payload));
      args.push_back(*e.id);
      args.push_back(e.type);
      args.push_back(payloads.back());
      args.push_back(e.cause ? detail::cause_json(*e.cause) : std::string());
      args.push_back(e.lane.value_or(""));
      args.push_back(e.settled ? "1" : "0");
    }
    args.push_back(k().notify(s));
    args.push_back(options.origin_index ? str(*options.origin_index) : std::string());
    Reply r = script(op, a2::detail::lua::kAppend, keys, args);
    if (!r.is_array() || r.size() == 0) detail::unexpected(op, "empty script reply");
    const std::string verdict = detail::text(op, r[0]);
    auto at = [&](std::size_t i) -> const Reply& {
      if (i >= r.size()) detail::unexpected(op, "short '" + verdict + "' reply");
      return r[i];
    };
    if (verdict == "empty") return AppendResult{{}, detail::text(op, at(1)) == "1"};
    if (verdict == "ok") {
      const auto [first, has_pending] = after_script(op, [&] {
        return std::pair{detail::number(op, at(1)), detail::text(op, at(2)) == "1"};
      });
      AppendResult result{{}, has_pending};
      result.events.reserve(events.size());
      for (std::size_t i = 0; i < events.size(); ++i) {
        auto& e = events[i];
        result.events.push_back(a2::detail::new_row(s, first + static_cast<std::int64_t>(i), *e.id,
                                                    std::move(e.type), std::move(e.payload),
                                                    e.cause, std::move(e.lane), e.settled, now));
      }
      return result;
    }
    if (verdict == "dup") {
      const bool has_pending = detail::text(op, at(1)) == "1";
      if (r.size() < 3) detail::unexpected(op, "short 'dup' reply");
      std::int64_t first = kMaxSafeInteger;
      for (std::size_t i = 2; i < r.size(); ++i) first = std::min(first, detail::number(op, r[i]));
      detail::run_test_hook("append_replay", s);
      // A valid retry occupies exactly n consecutive indexes.
      auto [rows, clear] =
          retry_after_gap([&] { return read_stored_range(op, s, first - 1, first + n - 1); });
      if (first < clear)
        throw Unavailable("a2 append: " + session_text(s) +
                          " was cleared while an append retry replayed; retry it");
      std::vector<Requested> wanted;
      for (const auto& e : events) wanted.push_back({*e.id, e.type, e.lane, e.cause});
      match_replay(op, s, wanted, rows);
      return AppendResult{std::move(rows), has_pending};
    }
    if (verdict == "partial")
      throw PartialDuplicateBatch("a2 append: " + detail::text(op, at(1)) +
                                  " of the batch's event ids already exist in " + session_text(s));
    if (verdict == "foreign")
      throw PartialDuplicateBatch("a2 append: event id '" + detail::text(op, at(1)) +
                                  "' already belongs to another session");
    if (verdict == "no_parent")
      throw InvalidArgument("a2 append: no event at index " + detail::text(op, at(1)) + " in " +
                            session_text(s));
    if (verdict == "superseded") {
      const std::int64_t index = detail::number(op, at(1));
      std::int64_t attempt = 0;
      for (const auto& e : events)
        if (e.cause && e.cause->index == index) {
          attempt = e.cause->attempt;
          break;
        }
      throw SupersededAttempt("a2 append: attempt " + str(attempt) + " no longer owns event " +
                              str(index) + " in " + session_text(s));
    }
    if (verdict == "cleared")
      throw SessionCleared("a2 append: scheduled work from event " + detail::text(op, at(1)) +
                           " was cleared in " + session_text(s));
    detail::unexpected(op, "unknown verdict '" + verdict + "'");
  });
}

// ── Claims ─────────────────────────────────────────────────────────────────────────────────

ClaimResult RedisStore::do_claim_available(const ClaimRequest& q) {
  constexpr std::string_view op = "claim_available";
  return guard(op, [&] {
    const std::int64_t now = clock().now_ms();
    const std::int64_t expires = a2::detail::lease_expires_at(now, q.ttl_ms, q.expires_at_ms);
    Argv args{q.holder, str(now), str(expires),
              str(static_cast<std::int64_t>(q.exclude_indexes.size()))};
    for (auto i : q.exclude_indexes) args.push_back(str(i));
    const auto& s = q.session_id;
    Reply r = script(
        op, a2::detail::lua::kClaimAvailable,
        {k().log(s), k().count(s), k().meta(s), k().pending(s), k().ready(s), k().meta_split(s)},
        args);
    if (r.is_array() && r.size() >= 2 && detail::text(op, r[0]) == "missing")
      throw Unavailable("a2 claim_available: redis event " + detail::text(op, r[1]) +
                        " missing in " + session_text(s));
    return after_script(op, [&] { return detail::claim_result(op, s, r); });
  });
}

RenewResult RedisStore::do_renew_claims(const RenewRequest& q) {
  constexpr std::string_view op = "renew_claims";
  return guard(op, [&] {
    const std::int64_t now = clock().now_ms();
    const std::int64_t expires = a2::detail::lease_expires_at(now, q.ttl_ms, q.expires_at_ms);
    Argv args{q.holder, str(now), str(expires), str(static_cast<std::int64_t>(q.claims.size()))};
    for (const auto& c : q.claims) {
      args.push_back(str(c.index));
      args.push_back(str(c.attempt));
    }
    const auto& s = q.session_id;
    Reply r = script(op, a2::detail::lua::kRenewClaims,
                     {k().count(s), k().meta(s), k().meta_split(s)}, args);
    return after_script(op, [&] { return detail::renew_result(op, r); });
  });
}

// ── Completion, failure, redrive ───────────────────────────────────────────────────────────

CompleteResult RedisStore::do_complete_attempt(const CompleteRequest& q) {
  constexpr std::string_view op = "complete_attempt";
  return guard(op, [&] {
    const std::int64_t now = clock().now_ms();
    const auto& s = q.session_id;
    const auto n = static_cast<std::int64_t>(q.events.size());
    Argv keys{k().log(s),   k().count(s),         k().meta(s),       k().pending(s),
              k().ready(s), k().pins(s, q.index), k().pin_counts(s), k().meta_split(s)};
    Argv args{s, str(now), str(q.index), str(q.attempt), str(n)};
    for (const auto& c : q.events) {
      keys.push_back(k().id(*c.id));
      args.push_back(*c.id);
      args.push_back(c.type);
      args.push_back(a2::detail::json_text(c.payload));
      args.push_back(c.lane.value_or(""));
      args.push_back(c.settled ? "1" : "0");
    }
    args.push_back(k().notify(s));
    Reply r = script(op, a2::detail::lua::kCompleteAttempt, keys, args);
    if (!r.is_array() || r.size() == 0) detail::unexpected(op, "empty script reply");
    const std::string verdict = detail::text(op, r[0]);
    const EventCause cause{q.index, q.attempt};
    if (verdict == "superseded") return CompleteResult{CompleteVerdict::superseded, {}};
    if (verdict == "missing")
      throw InvalidArgument("a2 complete_attempt: no event at index " + str(q.index) + " in " +
                            session_text(s));
    if (verdict == "partial")
      throw PartialDuplicateBatch(
          "a2 complete_attempt: a child id is already owned, or the retried completion of event " +
          str(q.index) + " does not match the recorded one in " + session_text(s));
    if (verdict == "ok") {
      const std::int64_t first = after_script(op, [&] {
        if (r.size() < 2) detail::unexpected(op, "short 'ok' reply");
        return detail::number(op, r[1]);
      });
      CompleteResult result{CompleteVerdict::completed, {}};
      for (std::size_t i = 0; i < q.events.size(); ++i) {
        const auto& c = q.events[i];
        result.events.push_back(a2::detail::new_row(s, first + static_cast<std::int64_t>(i), *c.id,
                                                    c.type, c.payload, cause, c.lane, c.settled,
                                                    now));
      }
      return result;
    }
    if (verdict == "dup") {
      if (n == 0) return CompleteResult{CompleteVerdict::completed, {}};
      if (r.size() < 2) detail::unexpected(op, "short 'dup' reply");
      std::int64_t first = kMaxSafeInteger;
      for (std::size_t i = 1; i < r.size(); ++i) first = std::min(first, detail::number(op, r[i]));
      detail::run_test_hook("complete_replay", s);
      auto [rows, clear] =
          retry_after_gap([&] { return read_stored_range(op, s, first - 1, first + n - 1); });
      // Cleared after the script matched the retry.
      if (q.index <= clear) return CompleteResult{CompleteVerdict::superseded, {}};
      std::vector<Requested> wanted;
      for (const auto& c : q.events) wanted.push_back({*c.id, c.type, c.lane, cause});
      match_replay(op, s, wanted, rows);
      return CompleteResult{CompleteVerdict::completed, std::move(rows)};
    }
    detail::unexpected(op, "unknown verdict '" + verdict + "'");
  });
}

FailResult RedisStore::do_fail_attempt(const FailRequest& q) {
  constexpr std::string_view op = "fail_attempt";
  return guard(op, [&] {
    const std::int64_t now = clock().now_ms();
    const auto& s = q.session_id;
    Reply r = script(op, a2::detail::lua::kFailAttempt,
                     {k().count(s), k().meta(s), k().pending(s), k().ready(s), k().pins(s, q.index),
                      k().pin_counts(s), k().meta_split(s)},
                     {str(q.index), str(q.attempt), q.error, str(q.max_failures), str(now)});
    const auto [verdict, failures] = after_script(op, [&] {
      if (!r.is_array() || r.size() < 2) detail::unexpected(op, "short script reply");
      return std::pair{detail::text(op, r[0]), detail::number(op, r[1])};
    });
    if (verdict == "cleared") return FailResult{FailVerdict::superseded, 0};
    if (verdict == "missing")
      throw InvalidArgument("a2 fail_attempt: no event at index " + str(q.index) + " in " +
                            session_text(s));
    if (verdict == "superseded") return FailResult{FailVerdict::superseded, failures};
    if (verdict == "dead_lettered") return FailResult{FailVerdict::dead_lettered, failures};
    if (verdict == "failed") return FailResult{FailVerdict::failed, failures};
    detail::unexpected(op, "unknown verdict '" + verdict + "'");
  });
}

std::vector<StoredEvent> RedisStore::do_dead_letters(const std::string& s) {
  constexpr std::string_view op = "dead_letters";
  return guard(op, [&] {
    Reply r =
        script(op, a2::detail::lua::kDeadLetters,
               {k().log(s), k().count(s), k().meta(s), k().pending(s), k().meta_split(s)}, {});
    if (!r.is_array()) detail::unexpected(op, "expected an array");
    std::vector<StoredEvent> out;
    for (std::size_t i = 0; i + 1 < r.size(); i += 2) {
      StoredEvent e = detail::to_stored_event(op, s, r[i]);
      const Reply& columns = r[i + 1];
      if (!columns.is_array()) detail::unexpected(op, "bad columns");
      // Lua drops trailing nils from a table, so the column list may be short.
      static const Reply kNil;
      std::array<const Reply*, 13> c{};
      for (std::size_t at = 0; at < 13; ++at) c[at] = at < columns.size() ? &columns[at] : &kNil;
      detail::apply_columns(op, e, c);
      out.push_back(std::move(e));
    }
    return out;
  });
}

RedriveResult RedisStore::do_redrive(const RedriveRequest& q) {
  constexpr std::string_view op = "redrive";
  return guard(op, [&] {
    const std::int64_t now = clock().now_ms();
    const auto& s = q.session_id;
    Reply r = script(op, a2::detail::lua::kRedrive,
                     {k().count(s), k().meta(s), k().pending(s), k().ready(s), k().meta_split(s)},
                     {str(q.index), std::string(to_string(q.action)), str(now)});
    return after_script(op, [&] {
      if (!r.is_array() || r.size() < 2) detail::unexpected(op, "short script reply");
      return RedriveResult{detail::text(op, r[0]) == "1", detail::text(op, r[1]) == "1"};
    });
  });
}

// ── Snapshots and state ────────────────────────────────────────────────────────────────────

StateResult RedisStore::do_read_state(const std::string& s, const std::string& reducer,
                                      const StateOptions& options) {
  constexpr std::string_view op = "read_state";
  return guard(op, [&] {
    return retry_after_gap([&] {
      auto lease = core_->acquire(op);
      auto cap =
          options.snapshot_through_index ? options.snapshot_through_index : options.through_index;
      Reply r = run_script(*lease, op, a2::detail::lua::kReadState,
                           {k().snap(s, reducer), k().snap_history(s, reducer), k().count(s)},
                           {cap ? str(*cap) : std::string()});
      if (!r.is_array() || r.size() < 3) detail::unexpected(op, "short script reply");
      auto invalid = [&] {
        return Unavailable("a2 read_state: redis state frontier for " + session_text(s) +
                           " is invalid");
      };
      StateResult result;
      const std::string raw_head = detail::text(op, r[0]);
      if (!raw_head.empty()) {
        auto v = detail::parse_integer(raw_head);
        if (!v || *v < 0) throw invalid();
        result.head_index = *v;
      }
      const std::string raw = detail::text(op, r[1]);
      if (!raw.empty()) {
        Json checkpoint;
        try {
          checkpoint = a2::detail::parse_stored_json(raw, a2::detail::kEnvelopeLevels);
        } catch (const Json::exception&) {
          detail::unexpected(op, "a stored checkpoint is not JSON");
        }
        const auto& index = checkpoint.contains("index") ? checkpoint["index"] : Json();
        if (!index.is_number()) throw invalid();
        auto parsed = detail::parse_number(a2::detail::json_text(index));
        if (!parsed || *parsed < 0) throw invalid();
        const std::int64_t i = *parsed;
        result.snapshot =
            Checkpoint{i, checkpoint.contains("state") ? checkpoint["state"] : Json()};
      }
      auto count = detail::parse_integer(detail::text(op, r[2]));
      if (!count || *count < 0) throw invalid();
      std::int64_t clear = 0;
      if (r.size() > 3 && !r[3].is_nil()) {
        auto c = detail::parse_integer(detail::text(op, r[3]));
        if (!c || *c < 0) throw invalid();
        clear = *c;
      }
      const std::int64_t frontier = std::min(*count, options.through_index.value_or(*count));
      // The fold starts at the latest clear marker when no checkpoint is newer.
      const std::int64_t after = std::max(result.snapshot ? result.snapshot->index : 0, clear - 1);
      result.events = read_event_range(*lease, op, s, after, frontier);
      if (clear > 0) result.clear_index = clear;
      return result;
    });
  });
}

void RedisStore::do_put_snapshots(const std::string& s, const std::string& reducer,
                                  std::vector<SnapshotWrite> writes) {
  constexpr std::string_view op = "put_snapshots";
  guard(op, [&] {
    const std::int64_t now = clock().now_ms();
    Argv args{str(now), k().pins_prefix(s), str(static_cast<std::int64_t>(writes.size()))};
    for (const auto& w : writes) {
      args.push_back(str(w.index));
      // JSON.stringify's key order, as the original writes it; r: the reducer is registered.
      args.push_back("{\"index\":" + str(w.index) + ",\"state\":" + a2::detail::json_text(w.state) +
                     ",\"updatedAt\":" + str(now) + ",\"r\":1}");
      args.push_back(str(static_cast<std::int64_t>(w.pin_event_indexes.size())));
      for (auto p : w.pin_event_indexes) args.push_back(str(p));
    }
    args.push_back(reducer);
    script(op, a2::detail::lua::kPutSnapshots,
           {k().snap(s, reducer), k().snap_history(s, reducer), k().count(s), k().meta(s),
            k().pin_counts(s), k().meta_split(s)},
           args);
    return 0;
  });
}

// ── Clear and reclaim ──────────────────────────────────────────────────────────────────────

ClearResult RedisStore::do_clear(const ClearRequest& q) {
  constexpr std::string_view op = "clear";
  return guard(op, [&] {
    const std::int64_t now = clock().now_ms();
    const auto& s = q.session_id;
    const std::string marker = ids().next_id();
    Reply r = script(op, a2::detail::lua::kClear,
                     {k().log(s), k().count(s), k().meta(s), k().meta_split(s), k().id(marker),
                      k().pending(s), k().ready(s)},
                     {s, str(now), q.if_last_index ? str(*q.if_last_index) : std::string(),
                      q.cause ? str(q.cause->index) : std::string(),
                      q.cause ? str(q.cause->attempt) : std::string(), marker, k().notify(s),
                      core_->options.clear_event_type});
    if (!r.is_array() || r.size() == 0) detail::unexpected(op, "empty script reply");
    const std::string verdict = detail::text(op, r[0]);
    if (verdict == "superseded")
      throw SupersededAttempt("a2 clear: attempt " + str(q.cause ? q.cause->attempt : 0) +
                              " no longer owns event " + str(q.cause ? q.cause->index : 0) +
                              " in " + session_text(s));
    if (verdict == "no_parent")
      throw InvalidArgument("a2 clear: no event at index " +
                            (r.size() > 1 ? detail::text(op, r[1]) : std::string("?")) + " in " +
                            session_text(s));
    if (verdict == "foreign")
      throw PartialDuplicateBatch("a2 clear: the clear marker id '" + marker + "' already exists");
    if (verdict != "ok" || r.size() < 4)
      detail::unexpected(op, "unknown verdict '" + verdict + "'");
    return after_script(op, [&] {
      return ClearResult{detail::text(op, r[1]) == "1", detail::number(op, r[2]),
                         detail::number(op, r[3])};
    });
  });
}

ReclaimResult RedisStore::do_reclaim(const std::string& s) {
  constexpr std::string_view op = "reclaim";
  return guard(op, [&] {
    auto lease = core_->acquire(op);
    Reply batch = run_script(*lease, op, a2::detail::lua::kReclaimBatch, {k().count(s)},
                             {str(a2::detail::kReclaimBatchSize)});
    if (!batch.is_array()) detail::unexpected(op, "expected an array");
    if (batch.size() == 0) return ReclaimResult{0, true};
    const std::string log = detail::text(op, batch[0]);
    Argv keys{log, k().count(s), k().meta(s), k().meta_split(s)};
    Argv args{s, k().pins_prefix(s), str(static_cast<std::int64_t>((batch.size() - 1) / 2))};
    for (std::size_t i = 1; i + 1 < batch.size(); i += 2) {
      // Id keys are built here, like append's: cjson does not reproduce JSON.stringify.
      const std::string id = detail::text(op, batch[i + 1]);
      keys.push_back(k().id(id));
      args.push_back(detail::text(op, batch[i]));
      args.push_back(id);
    }
    Reply r = run_script(*lease, op, a2::detail::lua::kReclaim, keys, args);
    return after_script(op, [&] {
      if (!r.is_array() || r.size() < 2) detail::unexpected(op, "short script reply");
      return ReclaimResult{detail::number(op, r[0]), detail::number(op, r[1]) == 1};
    });
  });
}

// ── Presence ───────────────────────────────────────────────────────────────────────────────

PresenceMap presence_of(std::string_view op, const Reply& r) {
  if (!r.is_array()) detail::unexpected(op, "expected an array");
  PresenceMap out;
  for (std::size_t i = 0; i + 1 < r.size(); i += 2) {
    try {
      out[detail::text(op, r[i])] = a2::detail::parse_stored_json(detail::text(op, r[i + 1]));
    } catch (const Json::exception&) {
      detail::unexpected(op, "a presence state is not JSON");
    }
  }
  return out;
}

PresenceMap RedisStore::do_patch_presence(const std::string& s, const PresencePatch& patch) {
  constexpr std::string_view op = "patch_presence";
  return guard(op, [&] {
    const std::int64_t now = clock().now_ms();
    const bool remove = patch.state.is_null();
    Reply r = script(
        op, a2::detail::lua::kPresencePatch, {k().presence(s)},
        {str(now), patch.participant, remove ? std::string() : a2::detail::json_text(patch.state),
         remove ? std::string() : str(now + patch.ttl_ms), std::string(kPresenceSource)});
    return after_script(op, [&] { return presence_of(op, r); });
  });
}

PresenceMap RedisStore::do_read_presence(const std::string& s) {
  constexpr std::string_view op = "read_presence";
  return guard(op, [&] {
    Reply r =
        script(op, a2::detail::lua::kPresenceRead, {k().presence(s)}, {str(clock().now_ms())});
    return presence_of(op, r);
  });
}

// ── Live feed ──────────────────────────────────────────────────────────────────────────────

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
        if (core_->closed.load()) throw Unavailable("a2 feed: the store is closed");
        auto now = std::chrono::steady_clock::now();
        if (!subscriber_ && now >= resubscribe_at_) resubscribe(deadline);
        now = std::chrono::steady_clock::now();
        if (catch_up_ || now >= last_poll_ + poll) {
          // A failed read throws (the feed stays usable: the next call reads again).
          auto page = RedisStore::feed_page(*core_, session_, cursor_.load());
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
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Unavailable(std::string("a2 redis feed: ") + e.what());
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
      detail::unexpected("feed",
                         "the payload of event " + std::to_string(row.index) + " is not JSON");
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
    if (!confirmation) throw Unavailable("a2 redis subscribe: SUBSCRIBE timed out");
    if (confirmation->is_error()) throw Unavailable("a2 redis subscribe: " + confirmation->str);
    if (!confirmation->is_array() || confirmation->size() < 1 ||
        (*confirmation)[0].str != "subscribe")
      detail::unexpected(op, "SUBSCRIBE was not confirmed");
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
  std::chrono::steady_clock::time_point last_poll_;
};

std::unique_ptr<Feed> RedisStore::do_subscribe(const std::string& s, std::int64_t after) {
  return guard("subscribe", [&]() -> std::unique_ptr<Feed> {
    return std::make_unique<RedisFeed>(core_, s, after);
  });
}

void check_prefix(const std::string& prefix) {
  auto bad = [&](const std::string& why) {
    throw InvalidArgument("a2 redis open: key_prefix '" + prefix + "' " + why);
  };
  if (prefix.empty()) bad("must not be empty");
  if (prefix.size() > 200) bad("is longer than 200 bytes");
  // Keys are "<prefix>:<session>:..." and session ids contain ':', so a prefix with ':' could
  // spell another prefix's keys ("ov" + "x:y" = "ov:x" + "y"); without it the mapping is one-to-one.
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
  if (options.connect_timeout.count() <= 0 || options.command_timeout.count() <= 0)
    throw InvalidArgument("a2 redis open: timeouts must be positive");
  if (options.feed_safety_poll.count() <= 0)
    throw InvalidArgument("a2 redis open: feed_safety_poll must be positive");
  if (options.pool_acquire_timeout && options.pool_acquire_timeout->count() <= 0)
    throw InvalidArgument("a2 redis open: pool_acquire_timeout must be positive");
  auto core = std::make_shared<Core>(std::move(endpoint), options);
  {
    auto lease = core->acquire("open");
    Reply pong = lease->command("open", {"PING"});
    if (pong.is_error()) throw Unavailable("a2 redis open: PING failed: " + pong.str);
  }
  return std::make_unique<RedisStore>(std::move(core));
}

}  // namespace a2::redis
