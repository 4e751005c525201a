# SPDX-License-Identifier: MIT
# Finds the backends' client libraries through pkg-config. Installed with the package and reused
# by a2-config.cmake, so a consumer's find_package(a2 COMPONENTS redis postgres) finds them too:
# the installed a2::redis / a2::postgres link a2_dep::hiredis / a2_dep::libpqxx by these names.
#
# a2_find_hiredis([OPTIONAL]) / a2_find_libpqxx([OPTIONAL]) define the GLOBAL imported target
# a2_dep::hiredis / a2_dep::libpqxx (an INTERFACE target, not an ALIAS, so that the exported link
# interface names a2_dep::*, which these macros recreate in a consumer). Without OPTIONAL a missing library is a fatal error; with it
# the target is simply not defined (a2-config.cmake then reports the component as not found).
find_package(PkgConfig QUIET)

macro(a2_find_hiredis)
  if(NOT TARGET a2_dep::hiredis)
    cmake_parse_arguments(_a2_dep "OPTIONAL" "" "" ${ARGN})
    if(_a2_dep_OPTIONAL)
      pkg_check_modules(A2_HIREDIS QUIET IMPORTED_TARGET GLOBAL hiredis>=0.14)
    else()
      pkg_check_modules(A2_HIREDIS REQUIRED IMPORTED_TARGET GLOBAL hiredis>=0.14)
    endif()
    if(TARGET PkgConfig::A2_HIREDIS)
      add_library(a2_dep::hiredis INTERFACE IMPORTED GLOBAL)
      target_link_libraries(a2_dep::hiredis INTERFACE PkgConfig::A2_HIREDIS)
    endif()
  endif()
endmacro()

macro(a2_find_libpqxx)
  if(NOT TARGET a2_dep::libpqxx)
    cmake_parse_arguments(_a2_dep "OPTIONAL" "" "" ${ARGN})
    if(_a2_dep_OPTIONAL)
      pkg_check_modules(A2_LIBPQXX QUIET IMPORTED_TARGET GLOBAL libpqxx>=6.4 libpq)
    else()
      pkg_check_modules(A2_LIBPQXX REQUIRED IMPORTED_TARGET GLOBAL libpqxx>=6.4 libpq)
    endif()
    if(TARGET PkgConfig::A2_LIBPQXX)
      add_library(a2_dep::libpqxx INTERFACE IMPORTED GLOBAL)
      target_link_libraries(a2_dep::libpqxx INTERFACE PkgConfig::A2_LIBPQXX)
    endif()
  endif()
endmacro()
