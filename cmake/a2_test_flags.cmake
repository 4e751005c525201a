# SPDX-License-Identifier: MIT
# a2_test_code_flags([<level>]): the tests' own code (conformance/, test/) is compiled at -O0 in
# the optimized build types, or at <level> (-O1, ...). The library under test keeps the build
# type's flags (Release: -O3, what users run); most test code's speed does not matter (the tests
# wait on servers), its compile time does: -O3 -> -O1 took 30-40 % off each test file, -O1 -> -O0
# takes another 18 % off the default preset's build (user CPU 605 s -> 494 s, wall 340 s ->
# 287 s on 2026-12-07). The model checks keep -O1 (conformance/model/CMakeLists.txt): they run
# the reference model at every step, and at -O0 model_check_memory took 91 s against 13 s.
# Call it at the top of a directory's CMakeLists.txt; it applies to the targets that directory
# and its subdirectories define, and a later call in a subdirectory wins (the later -O wins).
# In a build with the tests the examples, a2ctl and the benchmarks get it too: there they are
# test programs (bench/run and bench/run-worker build the benchmarks without the tests, at -O3).
function(a2_test_code_flags)
  set(level -O0)
  if(ARGC GREATER 0)
    set(level ${ARGV0})
  endif()
  add_compile_options($<$<CONFIG:Release,RelWithDebInfo,MinSizeRel>:${level}>)
endfunction()

# a2_test_unity(<target>): with A2_UNITY_TESTS (default: as A2_UNITY_BUILD), the target's test
# files are compiled four to a translation unit, so Catch2 and the a2 headers are parsed once per
# four files (a test file spends about 5 s of CPU parsing them). The tsan preset compiles the
# library file by file (A2_UNITY_BUILD off) but keeps the tests in unity files.
option(A2_UNITY_TESTS "Compile the test executables four files to a translation unit" ${A2_UNITY_BUILD})
function(a2_test_unity target)
  set_target_properties(${target} PROPERTIES UNITY_BUILD ${A2_UNITY_TESTS} UNITY_BUILD_BATCH_SIZE 4)
endfunction()
