// SPDX-License-Identifier: MIT
// Reads and paging of the Redis store (docs/redis-layout.md#reads): pipelined XRANGE pages
// joined with HMGET of the metadata columns, the range-gap checks
// (docs/redis-layout.md#range-gaps), read_state's fold after read_state.lua, and head.

#include <algorithm>
#include <array>
#include <optional>
#include <utility>
#include <vector>

#include "redis/codec.hpp"
#include "redis/scripts/read_state.hpp"
#include "redis/store.hpp"
#include "redis/test_hooks.hpp"

namespace a2::redis::detail {
namespace {

std::string session_text(const std::string& s) { return "session '" + s + "'"; }

void check_replies(std::string_view op, const std::vector<Reply>& replies) {
  for (const auto& r : replies)
    if (r.is_error()) fail(op, r.str);
}

// A stored count/split/boundary: absent = 0; else a safe non-negative integer.
std::int64_t stored_index(std::string_view op, const Reply& r, const std::string& session_id,
                          const char* name) {
  if (r.is_nil()) return 0;
  std::optional<std::int64_t> v;
  if (r.type == Reply::Type::integer)
    v = r.integer;
  else if (r.is_string()) {
    bool digits = !r.str.empty() && r.str.size() <= 16;
    for (char ch : r.str) digits = digits && ch >= '0' && ch <= '9';
    if (digits) v = parse_integer(r.str);
  }
  if (!v || *v < 0 || *v > kMaxSafeInteger)
    fail(op, std::string("redis ") + name + " for " + session_text(session_id) + " is invalid");
  return *v;
}

struct Bounds {
  std::int64_t frontier = 0;
  std::int64_t split = 0;
  std::int64_t clear = 0;
};

Bounds read_bounds(Connection& c, const Keys& k, std::string_view op, const std::string& s) {
  Reply r = c.command(op, {"MGET", k.count(s), k.meta_split(s), k.clear(s)});
  if (r.is_error()) fail(op, r.str);
  if (!r.is_array() || r.size() != 3) unexpected(op, "bad MGET reply");
  Bounds b;
  b.frontier = stored_index(op, r[0], s, "event count");
  b.split = r[1].is_nil() ? b.frontier : stored_index(op, r[1], s, "metadata split");
  b.clear = stored_index(op, r[2], s, "clear boundary");
  return b;
}

std::vector<Event> events_of(std::string_view op, const std::string& s, Reply&& r) {
  if (r.is_error()) fail(op, r.str);
  if (!r.is_array()) unexpected(op, "expected an array");
  std::vector<Event> out;
  out.reserve(r.size());
  for (auto& entry : r.elements) out.push_back(to_event(op, s, std::move(entry)));
  return out;
}

// A field "<I>:<suffix>" of a metadata hash as (I, the suffix's column in kMetaSuffixes), when I
// is written as the scripts and HMGET write it (digits, no leading zero) and the suffix is exposed.
std::optional<std::pair<std::int64_t, std::size_t>> metadata_field(std::string_view field) {
  const auto colon = field.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 16 || field[0] == '0')
    return std::nullopt;
  std::int64_t index = 0;
  for (std::size_t at = 0; at < colon; ++at) {
    if (field[at] < '0' || field[at] > '9') return std::nullopt;
    index = index * 10 + (field[at] - '0');
  }
  const auto suffix = field.substr(colon + 1);
  for (std::size_t c = 0; c < kMetaSuffixes.size(); ++c)
    if (suffix == kMetaSuffixes[c]) return std::make_pair(index, c);
  return std::nullopt;
}

[[noreturn]] void gap(std::string_view op, const std::string& s, const std::string& what) {
  throw RangeGap(prefix(op) + "the event range of " + session_text(s) + " " + what);
}

// Runs the batches plan() returns (one without commands ends) as a staged pipeline
// (docs/redis-layout.md#reads): a batch is sent once the previous one's first reply arrived (the
// server has then run all of it), so the server runs it while take(batch, replies) decodes the
// previous one. Replies left unread by an exception leave the connection broken (the pool drops
// it).
template <class Plan, class Take>
void staged_pipeline(Connection& c, std::string_view op, Plan&& plan, Take&& take) {
  auto batch = plan();
  if (batch.commands.empty()) return;
  c.send_pipeline(op, batch.commands);
  std::vector<Reply> replies;
  while (!batch.commands.empty()) {
    replies.clear();
    replies.push_back(c.next_reply(op));
    auto following = plan();
    if (!following.commands.empty()) c.send_pipeline(op, following.commands);
    while (replies.size() < batch.commands.size()) replies.push_back(c.next_reply(op));
    check_replies(op, replies);
    take(batch, replies);
    batch = std::move(following);
  }
}

}  // namespace

std::pair<std::vector<StoredEvent>, std::int64_t> RedisStore::read_stored_range(
    std::string_view op, const std::string& s, std::int64_t after,
    std::optional<std::int64_t> through) {
  if (through && *through <= after) return {{}, 0};
  auto lease = core_->acquire(op);
  Bounds b = read_bounds(*lease, k(), op, s);
  run_test_hook("read_bounds", s);
  const std::int64_t frontier = std::min(through.value_or(b.frontier), b.frontier);
  const std::int64_t first = std::max(after, b.clear - 1) + 1;  // Reads start at the marker.
  std::vector<StoredEvent> rows;
  if (frontier < first) return {std::move(rows), b.clear};
  rows.reserve(static_cast<std::size_t>(frontier - first + 1));

  constexpr std::size_t kColumns = kMetaSuffixes.size();
  using Columns = std::array<const Reply*, kColumns>;
  struct Page {
    std::int64_t first, last;
    std::size_t xrange;  // Index of its XRANGE reply; its metadata reply follows.
    bool whole_hash;     // HGETALL of its chunk, else HMGET of its indexes.
  };
  std::vector<Columns> columns;
  std::int64_t next = first;
  struct Batch {
    std::vector<Argv> commands;
    std::vector<Page> pages;
  };
  // The next kReadBatchPages pages. A page ends at its metadata hash's end (the split, or its
  // chunk's last index), so its metadata is one command: HGETALL of the chunk when the page holds
  // at least half of the chunk's events (the whole hash costs at most about twice the page's
  // fields), else HMGET of the page's fields, as for the base hash.
  auto plan = [&] {
    Batch batch;
    for (std::int64_t p = 0; p < kReadBatchPages && next <= frontier; ++p) {
      const bool chunked = next > b.split;
      const std::int64_t chunk_last = Keys::chunk_last(next);
      const std::int64_t last = std::min({chunk_last, frontier, chunked ? frontier : b.split});
      const std::int64_t chunk_events =
          std::min(chunk_last, b.frontier) - (chunk_last - a2::detail::kMetaChunkSize);
      const bool whole = chunked && 2 * (last - next + 1) >= chunk_events;
      batch.pages.push_back({next, last, batch.commands.size(), whole});
      batch.commands.push_back({"XRANGE", k().log(s), str(next) + "-0", str(last) + "-0", "COUNT",
                                str(last - next + 1)});
      std::string key = chunked ? k().meta_chunk(s, next) : k().meta(s);
      if (whole) {
        batch.commands.push_back({"HGETALL", std::move(key)});
      } else {
        Argv hmget{"HMGET", std::move(key)};
        hmget.reserve(2 + static_cast<std::size_t>(last - next + 1) * kColumns);
        for (std::int64_t i = next; i <= last; ++i)
          for (const char* suffix : kMetaSuffixes) hmget.push_back(str(i) + ":" + suffix);
        batch.commands.push_back(std::move(hmget));
      }
      next = last + 1;
    }
    return batch;
  };
  staged_pipeline(*lease, op, plan, [&](const Batch& batch, std::vector<Reply>& replies) {
    for (const auto& page : batch.pages) {
      Reply& entries = replies[page.xrange];
      if (!entries.is_array()) unexpected(op, "XRANGE did not return an array");
      const auto expected = static_cast<std::size_t>(page.last - page.first + 1);
      if (entries.size() == 0) gap(op, s, "ended before index " + str(frontier));
      for (std::size_t at = 0; at < entries.size(); ++at) {
        StoredEvent& e = rows.emplace_back();  // Filled in place, the entry's strings moved.
        fill_stored_event(op, s, std::move(entries.elements[at]), e);
        if (e.index != page.first + static_cast<std::int64_t>(at)) gap(op, s, "is not contiguous");
      }
      if (entries.size() != expected) gap(op, s, "ended before index " + str(frontier));
      // Join the metadata columns.
      const Reply& values = replies[page.xrange + 1];
      if (!values.is_array()) unexpected(op, "bad metadata reply");
      columns.assign(expected, Columns{});
      if (page.whole_hash) {
        if (values.size() % 2 != 0) unexpected(op, "bad HGETALL reply");
        for (std::size_t at = 0; at < values.size(); at += 2) {
          auto field = metadata_field(values[at].str);
          if (field && field->first >= page.first && field->first <= page.last)
            columns[static_cast<std::size_t>(field->first - page.first)][field->second] =
                &values[at + 1];
        }
      } else {
        if (values.size() != expected * kColumns) unexpected(op, "bad HMGET reply");
        for (std::size_t n = 0; n < expected; ++n)
          for (std::size_t c = 0; c < kColumns; ++c) columns[n][c] = &values[n * kColumns + c];
      }
      const std::size_t base = rows.size() - expected;
      for (std::size_t n = 0; n < expected; ++n) apply_columns(op, rows[base + n], columns[n]);
      // The page's replies are freed now: the next pages' events reuse their memory.
      entries = Reply{};
      replies[page.xrange + 1] = Reply{};
    }
  });
  return {std::move(rows), b.clear};
}

std::vector<Event> RedisStore::read_event_range(Connection& c, std::string_view op,
                                                const std::string& s, std::int64_t after,
                                                std::int64_t through) {
  std::vector<Event> events;
  if (through <= after) return events;
  events.reserve(static_cast<std::size_t>(through - after));
  std::int64_t next = after + 1;
  struct Batch {
    std::vector<Argv> commands;
    std::vector<std::pair<std::int64_t, std::int64_t>> pages;  // One XRANGE each.
  };
  auto plan = [&] {
    Batch batch;
    for (std::int64_t p = 0; p < kReadBatchPages && next <= through; ++p) {
      std::int64_t last = std::min(Keys::chunk_last(next), through);
      batch.commands.push_back({"XRANGE", k().log(s), str(next) + "-0", str(last) + "-0", "COUNT",
                                str(last - next + 1)});
      batch.pages.emplace_back(next, last);
      next = last + 1;
    }
    return batch;
  };
  staged_pipeline(c, op, plan, [&](const Batch& batch, std::vector<Reply>& replies) {
    for (std::size_t p = 0; p < batch.pages.size(); ++p) {
      Reply& r = replies[p];
      if (!r.is_array()) unexpected(op, "expected an array");
      if (r.size() == 0) gap(op, s, "ended before index " + str(through));
      const auto [page_first, page_last] = batch.pages[p];
      for (std::size_t at = 0; at < r.size(); ++at) {
        Event e = to_event(op, s, std::move(r.elements[at]));
        if (e.index != page_first + static_cast<std::int64_t>(at) || e.index > through)
          gap(op, s, "is not contiguous");
        events.push_back(std::move(e));
      }
      if (static_cast<std::int64_t>(r.size()) != page_last - page_first + 1)
        gap(op, s, "ended before index " + str(through));
      r = Reply{};  // Freed now: the next pages' events reuse its memory.
    }
  });
  return events;
}

std::vector<StoredEvent> RedisStore::do_read(const std::string& s, const ReadOptions& o) {
  return guard("read", [&] {
    return retry_after_gap(
        [&] { return read_stored_range("read", s, o.after_index, o.through_index).first; });
  });
}

std::vector<Event> RedisStore::do_read_history(const std::string& s, const ReadOptions& o) {
  constexpr std::string_view op = "read_history";
  return guard(op, [&] {
    return retry_after_gap([&] {
      auto lease = core_->acquire(op);
      Reply r = lease->command(op, {"MGET", k().count(s), k().clear(s)});
      if (r.is_error()) fail(op, r.str);
      if (!r.is_array() || r.size() != 2) unexpected(op, "bad MGET reply");
      std::int64_t frontier = stored_index(op, r[0], s, "event count");
      std::int64_t clear = stored_index(op, r[1], s, "clear boundary");
      run_test_hook("read_bounds", s);
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
    auto page = events_of(op, s, std::move(r));
    std::reverse(page.begin(), page.end());
    for (std::size_t at = 1; at < page.size(); ++at)
      if (page[at].index != page[at - 1].index + 1)
        fail(op, "the event range of " + session_text(s) + " is not contiguous");
    if (page.empty() || page.front().index <= from) return page;
    return std::nullopt;
  });
}

std::vector<Event> RedisStore::do_read_events(const std::string& s, std::int64_t after) {
  constexpr std::string_view op = "read_events";
  return guard(op, [&] {
    auto lease = core_->acquire(op);
    Reply r = lease->command(
        op, {"XRANGE", k().log(s), str(after + 1) + "-0", "+", "COUNT", str(kReadPageSize)});
    return events_of(op, s, std::move(r));
  });
}

// One MGET of the count and the boundary (docs/redis-layout.md#reads): both strict stored indexes.
HeadResult RedisStore::do_head(const std::string& s) {
  constexpr std::string_view op = "head";
  return guard(op, [&] {
    auto lease = core_->acquire(op);
    Reply r = lease->command(op, {"MGET", k().count(s), k().clear(s)});
    if (r.is_error()) fail(op, r.str);
    if (!r.is_array() || r.size() != 2) unexpected(op, "bad MGET reply");
    return HeadResult{stored_index(op, r[0], s, "event count"),
                      stored_index(op, r[1], s, "clear boundary")};
  });
}

std::vector<SerializedEvent> RedisStore::feed_page(Core& core, const std::string& s,
                                                   std::int64_t after) {
  constexpr std::string_view op = "read_feed_page";
  auto lease = core.acquire(op);
  Reply r = lease->command(
      op, {"XRANGE", core.keys.log(s), str(after + 1) + "-0", "+", "COUNT", str(kFeedPageSize)});
  if (r.is_error()) fail(op, r.str);
  if (!r.is_array()) unexpected(op, "expected an array");
  std::vector<SerializedEvent> out;
  out.reserve(r.size());
  for (auto& entry : r.elements) out.push_back(to_serialized_event(op, s, std::move(entry)));
  return out;
}

std::vector<SerializedEvent> RedisStore::do_read_feed_page(const std::string& s,
                                                           std::int64_t after) {
  return guard("read_feed_page", [&] { return feed_page(*core_, s, after); });
}

StateResult RedisStore::do_read_state(const std::string& s, const std::string& reducer,
                                      const StateOptions& options) {
  constexpr std::string_view op = "read_state";
  return guard(op, [&] {
    return retry_after_gap([&] {
      auto lease = core_->acquire(op);
      const auto cap =
          options.snapshot_through_index ? options.snapshot_through_index : options.through_index;
      const auto state = scripts::ReadState::decode(
          op, s, scripts::run(*lease, op, k(), scripts::ReadState{s, reducer, cap}));
      StateResult result;
      result.head_index = state.head_index;
      result.snapshot = state.checkpoint;
      const std::int64_t frontier =
          std::min(state.count, options.through_index.value_or(state.count));
      // The fold starts at the latest clear marker when no checkpoint is newer.
      const std::int64_t after =
          std::max(state.checkpoint ? state.checkpoint->index : 0, state.clear - 1);
      result.events = read_event_range(*lease, op, s, after, frontier);
      if (state.clear > 0) result.clear_index = state.clear;
      return result;
    });
  });
}

std::vector<StateResult> RedisStore::do_read_states(const std::string& reducer,
                                                    const std::vector<StateRequest>& requests) {
  std::vector<StateResult> out;
  out.reserve(requests.size());
  for (const auto& r : requests)
    out.push_back(do_read_state(
        r.session_id, reducer,
        {.through_index = r.through_index, .snapshot_through_index = r.snapshot_through_index}));
  return out;
}

}  // namespace a2::redis::detail
