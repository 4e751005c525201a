-- SPDX-License-Identifier: MIT
-- JSON_LUA: cheap text for strings and indexes, byte for byte what the costly calls give.
-- json_string(s) is cjson.encode(s) without calling cjson when no byte needs escaping: Redis's
-- cjson escapes the bytes 0-31, '"', '/', '\' and 127 (0-31 and 127 are the class %c) and copies
-- every other byte (128-255 included, without UTF-8 checks), so a string free of those is itself
-- in quotes.
-- decimal(x) is tostring(x) (and cjson.encode(x)) of an integer index: both format with
-- '%.14g', which prints an integer below 10^14 as its plain digits, as '%d' does, at a fraction
-- of the cost (glibc's %g is slow). Other values keep tostring.
local function json_string(s)
  if string.find(s, '[%c"/\\]') then return cjson.encode(s) end
  return '"' .. s .. '"'
end
local function decimal(x)
  if x < 1e14 and x > -1e14 and x % 1 == 0 then return string.format('%d', x) end
  return tostring(x)
end
