// SPDX-License-Identifier: MIT
#pragma once

// The ids the model check leaves to the stores (model_check.cpp): both stores of a step draw the
// same scripted ids, so their results compare id for id.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "a2/clock.hpp"

namespace a2::conformance {

// The stores' IdSource: a call draws the ids its script lists, in order (both sides run the same
// script), and "m1", "m2", ... once the script is used up (clear markers, whose ids are masked).
// Not thread-safe: the check draws from one thread.
class ScriptedIdSource final : public IdSource {
 public:
  void script(std::vector<std::string> ids) {
    ids_ = std::move(ids);
    drawn_ = 0;
  }
  // How many ids of the script were drawn since it was set.
  std::size_t drawn() const { return drawn_; }
  std::string next_id() override {
    if (drawn_ < ids_.size()) return ids_[drawn_++];
    return "m" + std::to_string(++markers_);
  }

 private:
  std::vector<std::string> ids_;
  std::size_t drawn_ = 0;
  std::uint64_t markers_ = 0;
};

// An event or child whose id starts with this is sent without id: the store draws the rest.
inline constexpr char kDrawnMark = '?';

// The events of `events` marked kDrawnMark lose their id; the ids their store is to draw are
// appended to `draws`, in the order the store draws them.
template <class E>
void leave_to_store(std::vector<E>& events, std::vector<std::string>& draws) {
  for (auto& e : events)
    if (e.id && !e.id->empty() && e.id->front() == kDrawnMark) {
      draws.push_back(e.id->substr(1));
      e.id.reset();
    }
}
// The same events as a caller that knows the drawn ids names them (a retry of the call).
template <class E>
void name_drawn(std::vector<E>& events) {
  for (auto& e : events)
    if (e.id && !e.id->empty() && e.id->front() == kDrawnMark) e.id = e.id->substr(1);
}

}  // namespace a2::conformance
