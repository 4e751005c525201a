// SPDX-License-Identifier: MIT
#include "confirm.hpp"

#include <unistd.h>

#include <istream>
#include <ostream>

namespace a2ctl {

void confirm(Context& ctx, const std::string& question) {
  if (ctx.globals.yes) return;
  if (!isatty(STDIN_FILENO))
    throw UsageError(question + " needs confirmation: stdin is not a terminal, pass --yes");
  ctx.err << question << " [y/N] " << std::flush;
  std::string answer;
  std::getline(ctx.in, answer);
  if (answer == "y" || answer == "Y" || answer == "yes" || answer == "YES") return;
  throw Refused("not confirmed; nothing changed");
}

}  // namespace a2ctl
