// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "a2/types.hpp"

namespace a2 {

// A live feed of one session (Store::subscribe): first the catch-up of every event after the
// starting cursor, then new events as they are appended, in index order, without gaps or
// duplicates within a lifetime. A cursor below the clear boundary resumes at the clear marker
// (type kClearEventType), which tells the reader to reset its state.
//
// Thread safety: next() is called by one thread at a time; cancel(), cancelled() and cursor()
// may be called from any thread. Destroy a feed before its store.
class Feed {
 public:
  virtual ~Feed() = default;
  // Waits up to `timeout` for events after the cursor and returns the next nonempty batch,
  // advancing the cursor past it; returns an empty batch on timeout or after cancel().
  // Throws Unavailable if the store was closed, or if a read failed (the server is down): the
  // feed stays usable, and a later next() continues from the cursor without loss, also across
  // a server restart (subscribing again from cursor() works too).
  virtual std::vector<Event> next(std::chrono::milliseconds timeout) = 0;
  // Stops the feed and wakes a next() that is waiting. Idempotent.
  virtual void cancel() noexcept = 0;
  virtual bool cancelled() const noexcept = 0;
  // The index of the last event returned (the starting after_index before any).
  virtual std::int64_t cursor() const noexcept = 0;
};

}  // namespace a2
