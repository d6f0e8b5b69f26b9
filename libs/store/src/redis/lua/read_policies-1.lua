--[[
  Reads every policy document of a namespace with its version.

  Input:
    KEYS[1] namespace policies hash

  Output: flat list of kind, name, version, document JSON
]]
local rcall = redis.call

local fields = rcall('HGETALL', KEYS[1])
local reply = {}
for i = 1, #fields, 2 do
  local kind, name = string.match(fields[i], '^doc:([a-z]+):(.*)$')
  if kind then
    reply[#reply + 1] = kind
    reply[#reply + 1] = name
    reply[#reply + 1] = tonumber(rcall('HGET', KEYS[1], 'ver:' .. kind .. ':' .. name)) or 0
    reply[#reply + 1] = fields[i + 1]
  end
end
return reply
