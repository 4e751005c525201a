// SPDX-License-Identifier: MIT
// The conformance seam for the in-memory backend.
#include "a2/memory.hpp"
#include "harness.hpp"

namespace a2::conformance {
namespace {
class MemoryBackend final : public Backend {
 public:
  std::string name() const override { return "memory"; }
  Fixture fresh(const StoreSettings& settings) override {
    Fixture f{std::make_shared<ManualClock>(kT0), std::make_shared<SequentialIdSource>("g"),
              nullptr};
    f.store = a2::memory::open({.clock = f.clock,
                                .ids = store_ids(f, settings),
                                .clear_event_type = settings.clear_event_type,
                                .observe = settings.observe});
    return f;
  }
};
}  // namespace

Backend& backend() {
  static MemoryBackend instance;
  return instance;
}
}  // namespace a2::conformance
