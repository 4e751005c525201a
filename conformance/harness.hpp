// SPDX-License-Identifier: MIT
#pragma once

// The seam between the conformance scenarios and a backend. Scenarios are written once against
// a2::Store; each backend executable links them with one conformance/backends/<name>.cpp that
// defines a2::conformance::backend().

#include <cstdint>
#include <memory>
#include <string>

#include "a2/clock.hpp"
#include "a2/observe.hpp"
#include "a2/store.hpp"

namespace a2::conformance {

inline constexpr std::int64_t kT0 = 1'000'000;  // Clock start (docs/semantics.md#scenarios).
inline constexpr std::int64_t kTtl = 30'000;    // The default lease in scenarios.

// One isolated store with a fake clock at kT0 and ids "g1", "g2", ... Move-only.
struct Fixture {
  std::shared_ptr<ManualClock> clock;
  std::shared_ptr<SequentialIdSource> ids;
  std::unique_ptr<Store> store;
  Store* operator->() const { return store.get(); }
  Store& operator*() const { return *store; }
};

// Store options a scenario may set; each backend maps them to its own Options.
struct StoreSettings {
  std::string clear_event_type = kClearEventType;
  ObserveOptions observe{};  // Hooks (a2/observe.hpp).
  // The store's IdSource instead of the fixture's "g1", "g2", ... (Fixture::ids then draws
  // nothing): a scenario's own, for example one that repeats itself (S245).
  std::shared_ptr<IdSource> ids{};
};

// The IdSource a backend opens a fixture's store with: the settings', else the fixture's.
inline std::shared_ptr<IdSource> store_ids(const Fixture& f, const StoreSettings& settings) {
  if (settings.ids) return settings.ids;
  return f.ids;
}

// A backend under test. Implementations start their server (if any) once per executable, on
// first use, and stop it at exit. Thread-safe.
class Backend {
 public:
  virtual ~Backend() = default;
  // "memory", "redis", "postgres": also the ctest label.
  virtual std::string name() const = 0;
  // A fresh, empty store isolated from every other (new instance / key prefix / schema).
  Fixture fresh() { return fresh(StoreSettings{}); }
  // The same, opened with `settings`. Throws what the backend's open() throws.
  virtual Fixture fresh(const StoreSettings& settings) = 0;
};

// Defined once per executable by conformance/backends/<name>.cpp.
Backend& backend();

// Shorthand for the scenarios.
inline Fixture fresh() { return backend().fresh(); }
inline Fixture fresh(const StoreSettings& settings) { return backend().fresh(settings); }

}  // namespace a2::conformance
