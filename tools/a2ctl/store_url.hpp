// SPDX-License-Identifier: MIT
#pragma once

// Which backend a --store URL names, and opening it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "a2/store.hpp"
#include "cli.hpp"

namespace a2ctl {

enum class Backend { redis, postgres };

// redis://... and unix://... are Redis; postgres://..., postgresql://... and a libpq key=value
// string ("host=... dbname=...") are Postgres. Throws UsageError for anything else.
Backend backend_of(std::string_view url);

// Opens the store: a2::redis::open with the key prefix or a2::postgres::open with the schema.
// With now_ms the store's clock stands still at that time (leases and delays are judged by it).
// Throws UsageError (no URL, unknown scheme, a backend not built in), a2::Unavailable.
std::unique_ptr<a2::Store> open_store(const Globals& globals, std::optional<std::int64_t> now_ms);

}  // namespace a2ctl
