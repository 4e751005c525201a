# SPDX-License-Identifier: MIT
# a2_test_code_flags(): the tests' own code (conformance/, test/) is compiled at -O1 in the
# optimized build types. The library under test keeps the build type's flags (Release: -O3, what
# users run); the test code's speed does not matter (the tests wait on servers), its compile time
# does: -O3 -> -O1 takes 30-40 % off each test file (conformance/scenarios/bad_input.cpp: 29.5 s
# -> 18.1 s of CPU). Call it at the top of a directory's CMakeLists.txt; it applies to the targets
# that directory and its subdirectories define. The later -O1 wins over the build type's -O3.
# In a build with the tests the examples, a2ctl and the benchmarks get it too: there they are
# test programs (bench/run and bench/run-worker build the benchmarks without the tests, at -O3).
function(a2_test_code_flags)
  add_compile_options($<$<CONFIG:Release,RelWithDebInfo,MinSizeRel>:-O1>)
endfunction()

# a2_test_unity(<target>): with A2_UNITY_TESTS (default: as A2_UNITY_BUILD), the target's test
# files are compiled four to a translation unit, so Catch2 and the a2 headers are parsed once per
# four files (a test file spends about 5 s of CPU parsing them). The tsan preset compiles the
# library file by file (A2_UNITY_BUILD off) but keeps the tests in unity files.
option(A2_UNITY_TESTS "Compile the test executables four files to a translation unit" ${A2_UNITY_BUILD})
function(a2_test_unity target)
  set_target_properties(${target} PROPERTIES UNITY_BUILD ${A2_UNITY_TESTS} UNITY_BUILD_BATCH_SIZE 4)
endfunction()
