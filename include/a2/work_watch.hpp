// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace a2 {

// What a WorkWatch reports: sessions that may have new claimable work. A hint, never a promise:
// a claim may find nothing (another worker was first).
struct WorkSignal {
  // Sessions named by a write that made work claimable sooner (an append of unsettled events,
  // completion children, a lane handoff, a retry, a release, a redrive) or found by the sweep;
  // each listed once, in the order first seen.
  std::vector<std::string> session_ids;
  // Signals may have been lost (the watch reconnected, or a signal did not name its session):
  // page through find_work() again instead of relying on session_ids.
  bool resync = false;
};

// The live work signal of a store (Store::watch_work, docs/semantics.md#watch_work): a worker
// that found no due work waits here instead of polling find_work().
//
// Thread safety: wait() is called by one thread at a time; cancel() and cancelled() may be
// called from any thread. Destroy a watch before its store.
class WorkWatch {
 public:
  virtual ~WorkWatch() = default;
  // Waits up to `timeout` for signals and returns those received (empty on timeout or after
  // cancel()). Runs the safety sweep inside the wait when its interval has come, and reports
  // the sessions the sweep indexed. Throws Unavailable if the store was closed; a lost
  // connection is not an error: the watch reconnects and reports resync.
  virtual WorkSignal wait(std::chrono::milliseconds timeout) = 0;
  // Stops the watch and wakes a wait() that is waiting. Idempotent.
  virtual void cancel() noexcept = 0;
  virtual bool cancelled() const noexcept = 0;
};

}  // namespace a2
