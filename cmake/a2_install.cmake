# SPDX-License-Identifier: MIT
# Install rules (A2_INSTALL): the public headers, the targets a2 / a2_redis / a2_postgres /
# a2_prometheus (those built) in the export set a2-targets with namespace a2::, a2-config.cmake (components redis and
# postgres), a2-config-version.cmake, a2_dependencies.cmake (reused by a2-config.cmake) and the
# pkg-config file a2.pc for the header-only core, LICENSE and the specification (docs/*.md).
include(CMakePackageConfigHelpers)

set(A2_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/a2"
    CACHE STRING "Where a2-config.cmake is installed, relative to the prefix")
set(A2_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
    CACHE STRING "Where a2.pc is installed, relative to the prefix")

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/a2"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
        COMPONENT a2_development
        FILES_MATCHING PATTERN "*.hpp")

# The backends that exist in this build; a2-config.cmake reports any other as not found.
set(_a2_install_targets a2)
set(A2_BUILT_COMPONENTS "")
foreach(_a2_component IN ITEMS redis postgres prometheus)
  if(TARGET a2_${_a2_component})
    list(APPEND _a2_install_targets a2_${_a2_component})
    list(APPEND A2_BUILT_COMPONENTS ${_a2_component})
    get_target_property(_a2_export_name a2_${_a2_component} EXPORT_NAME)
    if(NOT _a2_export_name)
      set_target_properties(a2_${_a2_component} PROPERTIES EXPORT_NAME ${_a2_component})
    endif()
  endif()
endforeach()

install(TARGETS ${_a2_install_targets}
        EXPORT a2-targets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT a2_development
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT a2_runtime
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT a2_runtime
        INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(EXPORT a2-targets
        NAMESPACE a2::
        FILE a2-targets.cmake
        DESTINATION "${A2_INSTALL_CMAKEDIR}"
        COMPONENT a2_development)

configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/a2-config.cmake.in"
  "${PROJECT_BINARY_DIR}/a2-config.cmake"
  INSTALL_DESTINATION "${A2_INSTALL_CMAKEDIR}")
# 0.x: a minor version may break the API, so only the same major.minor is compatible.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/a2-config-version.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMinorVersion)
install(FILES
          "${PROJECT_BINARY_DIR}/a2-config.cmake"
          "${PROJECT_BINARY_DIR}/a2-config-version.cmake"
          "${CMAKE_CURRENT_LIST_DIR}/a2_dependencies.cmake"
        DESTINATION "${A2_INSTALL_CMAKEDIR}"
        COMPONENT a2_development)

# a2.pc locates the prefix relative to itself (${pcfiledir}), so it stays right when the
# install is relocated or made with `cmake --install --prefix`.
if(IS_ABSOLUTE "${A2_INSTALL_PKGCONFIGDIR}")
  set(A2_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  set(A2_PC_PREFIX "\${pcfiledir}")
  string(REPLACE "/" ";" _a2_pc_parts "${A2_INSTALL_PKGCONFIGDIR}")
  foreach(_a2_part IN LISTS _a2_pc_parts)
    if(NOT _a2_part STREQUAL "" AND NOT _a2_part STREQUAL ".")
      string(APPEND A2_PC_PREFIX "/..")
    endif()
  endforeach()
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(A2_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(A2_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file("${CMAKE_CURRENT_LIST_DIR}/a2.pc.in" "${PROJECT_BINARY_DIR}/a2.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/a2.pc"
        DESTINATION "${A2_INSTALL_PKGCONFIGDIR}"
        COMPONENT a2_development)

# The MIT license asks for its notice to travel with copies of the software.
install(FILES "${PROJECT_SOURCE_DIR}/LICENSE"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/a2"
        COMPONENT a2_development)

# The specification the headers cite (docs/semantics.md, docs/redis-layout.md, ...), next to them.
install(DIRECTORY "${PROJECT_SOURCE_DIR}/docs/"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/a2"
        COMPONENT a2_development
        FILES_MATCHING PATTERN "*.md"
        PATTERN "incoming" EXCLUDE)
