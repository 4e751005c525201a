// SPDX-License-Identifier: MIT
// a2ctl: look at and operate an a2 store from outside (docs/operating.md).
#include <iostream>

#include "cli.hpp"

int main(int argc, char** argv) {
  a2ctl::Context ctx(std::cin, std::cout, std::cerr);
  return a2ctl::run(argc, argv, ctx);
}
