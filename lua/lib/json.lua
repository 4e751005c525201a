-- SPDX-License-Identifier: MIT
-- JSON_LUA: cheap text for strings and numbers.
-- json_string(s) is cjson.encode(s), the one encoding of a string in JSON text (Redis's cjson
-- escapes the bytes 0-31, '"', '/', '\' and 127 and copies every other byte, 128-255 included,
-- without UTF-8 checks). Called directly: scanning the string in Lua first for bytes that need
-- escaping (string.find with a class) cost about 4x the C call for a 36-byte id.
-- decimal(x) is the exact text of a number: the one place scripts turn numbers into text (replies,
-- fields, owner records, ranges). Lua's tostring and cjson.encode format with '%.14g', which
-- rounds anything from 10^14 up (a lease ending at 2^53-1 would read back as
-- 9.007199254741e+15). An integer prints as its plain digits ('%d' takes a 64-bit long in Redis's
-- Lua, exact for every integer a double holds below 2^63), the same bytes tostring gives below
-- 10^14 at a fraction of the cost (glibc's %g is slow); any other number as '%.17g', which
-- round-trips every double.
local json_string = cjson.encode
local function decimal(x)
  if x % 1 == 0 and x < 9.2e18 and x > -9.2e18 then return string.format('%d', x) end
  return string.format('%.17g', x)
end
