--[[
  Writes or deletes one policy document of a namespace, versioned for ETags, and tells every
  instance on the namespace channel.

  Input:
    KEYS[1] namespace policies hash (fields: doc:<kind>:<name> JSON, ver:<kind>:<name> version)
    ARGV[1] kind: default, dep, limit or queue
    ARGV[2] name ('' for the namespace default)
    ARGV[3] document JSON; '' deletes
    ARGV[4] condition: '' none, 'absent' only if no document exists, else the version it must have
    ARGV[5] namespace event channel

  Output: { code, version }
    CODE.written (version is the new one), CODE.precondition_failed (version is the current one,
    0 when none), CODE.not_found (nothing to delete)
]]
local rcall = redis.call
--- @include "codes"

local kind, name, document, condition = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local docField = 'doc:' .. kind .. ':' .. name
local versionField = 'ver:' .. kind .. ':' .. name

local exists = rcall('HEXISTS', KEYS[1], docField) == 1
local version = tonumber(rcall('HGET', KEYS[1], versionField)) or 0
if condition == 'absent' and exists then
  return { CODE.precondition_failed, version }
end
if condition ~= '' and condition ~= 'absent' and (not exists or tonumber(condition) ~= version) then
  return { CODE.precondition_failed, exists and version or 0 }
end
if document == '' then
  if not exists then
    return { CODE.not_found, 0 }
  end
  rcall('HDEL', KEYS[1], docField)
else
  rcall('HSET', KEYS[1], docField, document)
end
-- The version outlives a delete, so an ETag is never reused for another document.
version = rcall('HINCRBY', KEYS[1], versionField, 1)
rcall('SPUBLISH', ARGV[5], cjson.encode({ type = 'policy', kind = kind, name = name }))
return { CODE.written, version }
