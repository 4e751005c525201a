// SPDX-License-Identifier: MIT
#pragma once

#include <memory>
#include <string>

#include "a2/clock.hpp"
#include "a2/observe.hpp"
#include "a2/store.hpp"

// The in-memory reference backend: the full contract, no server, nothing persisted.
namespace a2::memory {

struct Options {
  std::shared_ptr<Clock> clock{};  // Default: the system clock.
  std::shared_ptr<IdSource> ids{}; // Default: time-ordered ids (TimeOrderedIdSource).
  // The type of the marker event a clear appends (a valid event type). Default "a2.clear".
  std::string clear_event_type = kClearEventType;
  ObserveOptions observe{};  // Hooks (a2/observe.hpp). Default: none.
};

// A new, empty store. Throws InvalidArgument for an invalid clear_event_type. Safe for
// concurrent use from many threads (one mutex per store makes every operation atomic).
std::unique_ptr<Store> open(const Options& options = {});

}  // namespace a2::memory

#include "a2/detail/memory_store.hpp"
