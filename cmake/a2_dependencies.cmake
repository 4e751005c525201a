# SPDX-License-Identifier: MIT
# Finds the backends' client libraries through pkg-config. Installed with the package and reused
# by a2-config.cmake, so a consumer's find_package(a2 COMPONENTS redis postgres) finds them too.
include(GNUInstallDirs)
find_package(PkgConfig QUIET)

macro(a2_find_hiredis)
  if(NOT TARGET a2_dep::hiredis)
    pkg_check_modules(A2_HIREDIS REQUIRED IMPORTED_TARGET GLOBAL hiredis>=0.14)
    add_library(a2_dep::hiredis ALIAS PkgConfig::A2_HIREDIS)
  endif()
endmacro()

macro(a2_find_libpqxx)
  if(NOT TARGET a2_dep::libpqxx)
    pkg_check_modules(A2_LIBPQXX REQUIRED IMPORTED_TARGET GLOBAL libpqxx>=6.4 libpq)
    add_library(a2_dep::libpqxx ALIAS PkgConfig::A2_LIBPQXX)
  endif()
endmacro()
