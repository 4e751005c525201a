// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <thread>

// Helpers of the worker tests (test/worker).
namespace a2::test {

// Polls `pred` every millisecond until it holds (true) or `timeout` passes (false).
template <class Pred>
bool eventually(Pred&& pred, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace a2::test
