# SPDX-License-Identifier: MIT
# Warnings as errors for the project's own targets (never for consumers of the installed package).
function(a2_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Werror>)
endfunction()
