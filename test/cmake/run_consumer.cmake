# SPDX-License-Identifier: MIT
# Driver of the consumer tests, run with `cmake -D... -P run_consumer.cmake`.
#   STEP=install           cmake --install A2_BINARY_DIR into PREFIX (emptied first); checks the files
#   STEP=find_package      configure, build and run test/cmake/find_package against PREFIX
#   STEP=add_subdirectory  configure, build and run test/cmake/add_subdirectory with A2_SOURCE_DIR
#   STEP=pkg_config        compile and run consumer_main.cpp with `pkg-config --cflags --libs a2`
# The consumer is built from scratch in WORK_DIR with the parent build's generator, compiler,
# build type (add_subdirectory: none) and flags (GENERATOR, MAKE_PROGRAM, CXX_COMPILER, BUILD_TYPE, CXX_FLAGS,
# EXE_LINKER_FLAGS), linking the components REDIS / POSTGRES (ON/OFF).
cmake_minimum_required(VERSION 3.25)

function(a2_run)
  cmake_parse_arguments(PARSE_ARGV 0 _run "" "WHAT" "COMMAND")
  string(REPLACE ";" " " _shown "${_run_COMMAND}")
  message(STATUS "${_run_WHAT}: ${_shown}")
  execute_process(COMMAND ${_run_COMMAND} RESULT_VARIABLE _rc COMMAND_ECHO NONE)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${_run_WHAT} failed (${_rc})")
  endif()
endfunction()

function(a2_configure_build_run source)
  file(REMOVE_RECURSE "${WORK_DIR}")
  set(_configure "${CMAKE_COMMAND}" -S "${source}" -B "${WORK_DIR}" -G "${GENERATOR}"
      "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}"
      "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}"
      "-DA2_CONSUMER_REDIS=${REDIS}" "-DA2_CONSUMER_POSTGRES=${POSTGRES}" ${ARGN})
  if(MAKE_PROGRAM)
    list(APPEND _configure "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
  endif()
  a2_run(WHAT "configure" COMMAND ${_configure})
  a2_run(WHAT "build" COMMAND "${CMAKE_COMMAND}" --build "${WORK_DIR}" --parallel 2)
  a2_run(WHAT "run" COMMAND "${WORK_DIR}/consumer")
endfunction()

foreach(_var STEP WORK_DIR)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "run_consumer.cmake: -D${_var}=... is required")
  endif()
endforeach()

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE "${PREFIX}")
  a2_run(WHAT "install" COMMAND "${CMAKE_COMMAND}" --install "${A2_BINARY_DIR}" --prefix "${PREFIX}"
                                --config "${BUILD_TYPE}")
  set(_expected
      include/a2/a2.hpp include/a2/store.hpp include/a2/detail/validate.hpp
      include/a2/detail/memory_store.hpp include/a2/redis.hpp include/a2/postgres.hpp
      ${LIBDIR}/cmake/a2/a2-config.cmake ${LIBDIR}/cmake/a2/a2-config-version.cmake
      ${LIBDIR}/cmake/a2/a2-targets.cmake ${LIBDIR}/cmake/a2/a2_dependencies.cmake
      ${LIBDIR}/pkgconfig/a2.pc share/doc/a2/LICENSE share/doc/a2/README.md
      share/doc/a2/semantics.md share/doc/a2/redis-layout.md share/doc/a2/postgres-layout.md)
  if(REDIS)
    list(APPEND _expected ${LIBDIR}/liba2_redis.a)
  endif()
  if(POSTGRES)
    list(APPEND _expected ${LIBDIR}/liba2_postgres.a)
  endif()
  foreach(_file IN LISTS _expected)
    if(NOT EXISTS "${PREFIX}/${_file}")
      message(FATAL_ERROR "install: ${PREFIX}/${_file} is missing")
    endif()
  endforeach()
  # Private sources (src/, generated script headers) are never installed.
  file(GLOB_RECURSE _installed RELATIVE "${PREFIX}" "${PREFIX}/*")
  foreach(_file IN LISTS _installed)
    if(_file MATCHES "(^|/)(src|common|a2_generated)/|lua_scripts|sql_files")
      message(FATAL_ERROR "install: private file ${_file} was installed")
    endif()
  endforeach()
elseif(STEP STREQUAL "find_package")
  a2_configure_build_run("${CONSUMER_SOURCE_DIR}" "-DCMAKE_PREFIX_PATH=${PREFIX}"
                         -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
  # The package must have come from the fresh install, not from anywhere else on the machine.
  file(STRINGS "${WORK_DIR}/CMakeCache.txt" _a2_dir REGEX "^a2_DIR:")
  string(REGEX REPLACE "^a2_DIR:[A-Z]+=" "" _a2_dir "${_a2_dir}")
  file(REAL_PATH "${_a2_dir}" _a2_dir)
  file(REAL_PATH "${PREFIX}/${LIBDIR}/cmake/a2" _want)
  if(NOT _a2_dir STREQUAL _want)
    message(FATAL_ERROR "find_package found a2 in '${_a2_dir}', expected '${_want}'")
  endif()
elseif(STEP STREQUAL "add_subdirectory")
  # A vendoring project that sets no CMAKE_BUILD_TYPE (CMake's default: no optimization flags),
  # the usual first try of vendoring. It also spares the test a second -O3 compile of the whole
  # library (the installed package of find_package/pkg_config has the parent's build type).
  set(BUILD_TYPE "")
  a2_configure_build_run("${CONSUMER_SOURCE_DIR}" "-DA2_SOURCE_DIR=${A2_SOURCE_DIR}")
elseif(STEP STREQUAL "pkg_config")
  file(REMOVE_RECURSE "${WORK_DIR}")
  file(MAKE_DIRECTORY "${WORK_DIR}")
  set(ENV{PKG_CONFIG_PATH} "${PREFIX}/${LIBDIR}/pkgconfig")
  execute_process(COMMAND "${PKG_CONFIG}" --cflags --libs a2
                  OUTPUT_VARIABLE _flags OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "pkg-config --cflags --libs a2 failed (${_rc})")
  endif()
  separate_arguments(_flags UNIX_COMMAND "${_flags}")
  # The include directory must be the installed one (a2.pc derives it from its own location).
  file(REAL_PATH "${PREFIX}/include" _want)
  set(_found "")
  foreach(_flag IN LISTS _flags)
    if(_flag MATCHES "^-I(.+)$")
      set(_dir "${CMAKE_MATCH_1}")
      if(EXISTS "${_dir}/a2/a2.hpp")
        file(REAL_PATH "${_dir}" _found)
      endif()
    endif()
  endforeach()
  if(NOT _found STREQUAL _want)
    message(FATAL_ERROR "pkg-config gave '${_flags}': no -I for ${_want}")
  endif()
  separate_arguments(_cxx_flags UNIX_COMMAND "${CXX_FLAGS} ${EXE_LINKER_FLAGS}")
  a2_run(WHAT "compile" COMMAND "${CXX_COMPILER}" -std=c++20 -Wall -Wextra -Wpedantic -Werror
                                ${_cxx_flags} "${CONSUMER_SOURCE_DIR}/../consumer_main.cpp" ${_flags}
                                -o "${WORK_DIR}/consumer")
  a2_run(WHAT "run" COMMAND "${WORK_DIR}/consumer")
else()
  message(FATAL_ERROR "run_consumer.cmake: unknown STEP '${STEP}'")
endif()
