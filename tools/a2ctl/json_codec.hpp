// SPDX-License-Identifier: MIT
#pragma once

// The --json and export formats (docs/operating.md#json-formats): field names are the C++ API's
// (snake_case), times are ms since the Unix epoch, an absent value is null.

#include <string>

#include "a2/results.hpp"
#include "a2/types.hpp"

namespace a2ctl {

// Every field of a StoredEvent (one export line, one element of an events list).
a2::Json to_json(const a2::StoredEvent& e);
a2::Json to_json(const a2::SessionSummary& s);
a2::Json to_json(const a2::SessionInspection& s);

// An exported line back into an event: `id` and `type` are required strings, the rest may be
// absent or null. Throws UsageError naming the field that is wrong.
a2::StoredEvent stored_event_from_json(const a2::Json& j);

}  // namespace a2ctl
