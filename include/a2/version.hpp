// SPDX-License-Identifier: MIT
#pragma once

// The library version, defined once here; CMake reads it from this file.
#define A2_VERSION_MAJOR 0
#define A2_VERSION_MINOR 1
#define A2_VERSION_PATCH 0

namespace a2 {
inline constexpr int kVersionMajor = A2_VERSION_MAJOR;
inline constexpr int kVersionMinor = A2_VERSION_MINOR;
inline constexpr int kVersionPatch = A2_VERSION_PATCH;
// The package version whose stored data layout this library shares.
inline constexpr const char* kCompatiblePackageVersion = "experimental-a2 0.18.0";
}  // namespace a2
