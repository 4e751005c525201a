// SPDX-License-Identifier: MIT
#pragma once

// The confirmation of destructive commands (redrive, clear).

#include <string>

#include "cli.hpp"

namespace a2ctl {

// Returns when the operator confirmed `question`: --yes, or "y"/"yes" typed on a terminal
// (asked on stderr as "<question> [y/N] "). Throws Refused when the answer is anything else
// (exit 1) and UsageError when stdin is not a terminal and --yes was not given (exit 2).
void confirm(Context& ctx, const std::string& question);

}  // namespace a2ctl
