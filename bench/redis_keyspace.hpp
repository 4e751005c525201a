// SPDX-License-Identifier: MIT
#pragma once

// The server's keyspace hash table, made steady before measured blocks (redis_bench). Redis
// doubles the table of a database when its keys reach the table's size and then moves the keys
// over incrementally: while that rehash runs, every key lookup probes both tables and moves a
// bucket, so an operation costs more (an append about twice its server time at a million keys,
// measured 2026-12-07). Every event id is a key of its own (docs/redis-layout.md), so a
// section that writes events crosses such a size now and then; when it happens during the
// blocks of a comparison, it lands on some of them and not on others. settle_keyspace() runs
// before such a comparison: it lets a rehash in progress finish, and when the keys the blocks
// will add could reach the table's size, it makes the table double first (temporary keys),
// finishes that rehash and deletes them. The cost of the rehash itself is measured on its own
// (Appends against millions of events of history).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "redis_admin.hpp"

namespace a2::bench {

struct KeyspaceTable {
  std::int64_t keys = 0;   // DBSIZE
  std::int64_t size = 0;   // buckets of the table the keys live in (the new one while rehashing)
  bool rehashing = false;  // a second table exists: the keys are being moved to it
};

// Database 0's table from DEBUG HTSTATS, or nothing when the server refuses DEBUG (a server
// not started with `enable-debug-command local`, as the benchmark's own servers are).
inline std::optional<KeyspaceTable> keyspace_table(Admin& admin) {
  std::string text;
  try {
    text = admin.command({"DEBUG", "HTSTATS", "0"});
  } catch (const std::runtime_error&) {
    return std::nullopt;
  }
  KeyspaceTable t;
  t.keys = std::stoll(admin.command({"DBSIZE"}));
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("[Expires HT]", 0) == 0) break;  // Only the keys' table.
    if (line.find("Hash table 1") != std::string::npos) t.rehashing = true;
    const std::string label = "table size: ";
    if (auto at = line.find(label); at != std::string::npos)
      t.size = std::max<std::int64_t>(t.size, std::stoll(line.substr(at + label.size())));
  }
  return t;
}

struct SettledKeyspace {
  bool checked = false;     // false: DEBUG refused, nothing done
  KeyspaceTable before;     // as found
  KeyspaceTable after;      // as left
  std::int64_t padded = 0;  // temporary keys written to make the table double
  std::int64_t kept = 0;    // of those, the ones left so that the server does not shrink it
  double ms = 0;            // time taken

  // One sentence for RESULTS.md.
  std::string describe() const {
    if (!checked) return "the keyspace's table was not checked (the server refuses DEBUG HTSTATS)";
    std::ostringstream out;
    out << "keyspace table before: " << before.keys << " keys in " << before.size << " buckets"
        << (before.rehashing ? ", rehashing" : "") << "; after: " << after.keys << " keys in "
        << after.size << " buckets" << (after.rehashing ? ", rehashing" : "");
    if (padded > 0)
      out << " (doubled with " << padded << " temporary keys, " << kept
          << " of them kept until the program ends so that it stays so)";
    out << ", " << static_cast<std::int64_t>(ms) << " ms";
    return out.str();
  }
};

// Makes database 0's table steady for blocks that add at most `headroom` keys: no rehash in
// progress, and more buckets than the keys plus headroom. Lookups move the rehash on (each
// moves one bucket), so a script of EXISTS calls finishes one in well under a second. The
// temporary keys are `a2bench-pad-<call>:<n>` (DEBUG POPULATE); the ones whose deletion would
// leave the table under 1/8 full stay, so the server does not shrink it (it does below 1/10);
// redis_bench deletes them at its end on a server given by --url.
inline SettledKeyspace settle_keyspace(Admin& admin, std::int64_t headroom) {
  const auto started = std::chrono::steady_clock::now();
  static int calls = 0;
  const std::string pad = "a2bench-pad-" + std::to_string(++calls);
  SettledKeyspace s;
  auto table = keyspace_table(admin);
  if (!table) return s;
  s.checked = true;
  s.before = *table;
  auto finish_rehash = [&] {
    for (int k = 0; k < 200 && table->rehashing; ++k) {
      (void)admin.command({"EVAL",
                           "for i = 1, tonumber(ARGV[1]) do redis.call('EXISTS', KEYS[1]) end "
                           "return 1",
                           "1", pad + ":none", "200000"});
      table = keyspace_table(admin);
    }
    if (table->rehashing) throw std::runtime_error("settle_keyspace: the rehash did not finish");
  };
  finish_rehash();
  // The keys before padding; the pads are a2bench-pad-<call>:0 .. padded - 1.
  const std::int64_t real = table->keys;
  for (int k = 0; k < 40 && real + headroom >= table->size; ++k) {
    // Keys past both the table's size and the blocks' need: the adds that find the keys at the
    // size double the table, as often as that takes (none while a rehash runs, so the next
    // round adds one more key to start the last doubling).
    s.padded = std::max(s.padded + 1, std::max(table->size, real + headroom) + 1 - real);
    (void)admin.command({"DEBUG", "POPULATE", std::to_string(s.padded), pad});
    table = keyspace_table(admin);
    finish_rehash();
  }
  if (real + headroom >= table->size)
    throw std::runtime_error("settle_keyspace: the table did not grow past the blocks' keys");
  const std::int64_t keep = std::min(s.padded, std::max<std::int64_t>(0, table->size / 8 - real));
  s.kept = keep;
  for (std::int64_t from = keep; from < s.padded; from += 50000) {
    (void)admin.command({"EVAL",
                         "for i = tonumber(ARGV[2]), tonumber(ARGV[3]) do "
                         "redis.call('DEL', ARGV[1] .. ':' .. i) end return 1",
                         "0", pad, std::to_string(from),
                         std::to_string(std::min(from + 50000, s.padded) - 1)});
  }
  table = keyspace_table(admin);
  s.after = *table;
  s.ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return s;
}

}  // namespace a2::bench
