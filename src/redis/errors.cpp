// SPDX-License-Identifier: MIT
#include "redis/errors.hpp"

#include <exception>

namespace a2::redis::detail {

void fail(std::string_view op, std::string_view what) {
  throw Unavailable(prefix(op) + std::string(what));
}

void translate_current(std::string_view op, bool after_write) {
  try {
    throw;
  } catch (const Unavailable& e) {
    if (!after_write || e.outcome_unknown()) throw;
    throw Unavailable(std::string(e.what()) + " (after the script ran: outcome unknown)", true);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    if (after_write)
      throw Unavailable(
          prefix(op) + "unreadable reply after the script ran (outcome unknown): " + e.what(),
          true);
    throw Unavailable(prefix(op) + e.what());
  } catch (...) {
    throw Unavailable(prefix(op) + "unknown failure" +
                          (after_write ? " after the script ran (outcome unknown)" : ""),
                      after_write);
  }
}

}  // namespace a2::redis::detail
