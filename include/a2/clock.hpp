// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>

// The store's injectable sources of time and event ids.
namespace a2 {

// Milliseconds since the Unix epoch. Implementations must be safe to call from many threads. A
// store refuses a reading outside 0..2^53-1: the call that read it fails with InvalidArgument and
// changes nothing (docs/semantics.md#input-limits).
class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::int64_t now_ms() = 0;
};

// The wall clock. Thread-safe.
class SystemClock final : public Clock {
 public:
  std::int64_t now_ms() override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

// A clock that moves only when told to: for tests and simulations. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(std::int64_t start_ms = 1'000'000) : now_(start_ms) {}
  std::int64_t now_ms() override { return now_.load(); }
  void set(std::int64_t ms) { now_.store(ms); }
  void advance(std::int64_t ms) { now_.fetch_add(ms); }

 private:
  std::atomic<std::int64_t> now_;
};

// Produces fresh event ids (for events appended without one, and clear markers).
// Implementations must be safe to call from many threads.
class IdSource {
 public:
  virtual ~IdSource() = default;
  virtual std::string next_id() = 0;
};

// Random 128-bit ids as 32 lowercase hex digits. Thread-safe.
class RandomIdSource final : public IdSource {
 public:
  RandomIdSource() : engine_(std::random_device{}()) {}
  std::string next_id() override {
    static constexpr char kHex[] = "0123456789abcdef";
    std::uniform_int_distribution<std::uint64_t> dist;
    std::uint64_t parts[2];
    {
      std::lock_guard lock(mutex_);
      parts[0] = dist(engine_);
      parts[1] = dist(engine_);
    }
    std::string out(32, '0');
    for (int p = 0; p < 2; ++p)
      for (int i = 0; i < 16; ++i) out[p * 16 + i] = kHex[(parts[p] >> (60 - 4 * i)) & 0xF];
    return out;
  }

 private:
  std::mutex mutex_;
  std::mt19937_64 engine_;
};

// Time-ordered ids as 32 lowercase hex digits, the stores' default: the first 12 digits are
// the milliseconds since the Unix epoch when the id was drawn (the system clock, 48 bits), the
// other 20 are random (80 bits, so ids drawn in one millisecond do not repeat in practice).
// Ids drawn later sort after earlier ones (bytewise, up to a clock set back): an index of
// event ids (Postgres's unique index on a2_events.event_id) takes new ids at its right edge,
// on pages already in memory, instead of on a random page of an index that grows with the
// history (docs/postgres-layout.md#indexes). Thread-safe.
class TimeOrderedIdSource final : public IdSource {
 public:
  TimeOrderedIdSource() : engine_(std::random_device{}()) {}
  std::string next_id() override {
    static constexpr char kHex[] = "0123456789abcdef";
    const auto ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::system_clock::now().time_since_epoch())
            .count());
    std::uniform_int_distribution<std::uint64_t> dist;
    std::uint64_t random[2];
    {
      std::lock_guard lock(mutex_);
      random[0] = dist(engine_);
      random[1] = dist(engine_);
    }
    // 48 bits of time, then 16 + 64 random bits.
    const std::uint64_t high = (ms << 16) | (random[0] & 0xFFFF);
    std::string out(32, '0');
    for (int i = 0; i < 16; ++i) out[i] = kHex[(high >> (60 - 4 * i)) & 0xF];
    for (int i = 0; i < 16; ++i) out[16 + i] = kHex[(random[1] >> (60 - 4 * i)) & 0xF];
    return out;
  }

 private:
  std::mutex mutex_;
  std::mt19937_64 engine_;
};

// Deterministic ids prefix1, prefix2, ...: for tests. Thread-safe.
class SequentialIdSource final : public IdSource {
 public:
  explicit SequentialIdSource(std::string prefix = "g") : prefix_(std::move(prefix)) {}
  std::string next_id() override { return prefix_ + std::to_string(++counter_); }

 private:
  std::string prefix_;
  std::atomic<std::uint64_t> counter_{0};
};

}  // namespace a2
