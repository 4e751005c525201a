-- SPDX-License-Identifier: MIT
-- Returns the live presence map of a session and prunes expired entries (expiresAt <= now)
-- (docs/semantics.md#read_presence; the seed's presence scripts are hidden, so this layout is the
-- library's own).
-- KEYS[1] presence (p:S:presence)
-- ARGV[1] now ms
-- Returns { participant, stateJson, ... } of the live entries, ordered by participant
--#include presence.lua
return presence_live(KEYS[1], tonumber(ARGV[1]))
