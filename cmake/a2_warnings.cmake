# SPDX-License-Identifier: MIT
# Warnings as errors for the project's own targets (never for consumers of the installed package).
# g++ 12 reports false -Wrestrict positives on std::string concatenation at -O3 (GCC bug 105329),
# so that one warning is off for g++ before 13.
function(a2_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Werror>
    $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-restrict>)
endfunction()
