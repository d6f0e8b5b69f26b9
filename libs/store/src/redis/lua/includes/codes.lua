-- The codes scripts answer with: ScriptCode of libs/store/src/redis/script-codes.ts, one table for
-- TypeScript and Lua, written in by loadScript (CODE.granted, CODE.breaker_open, ...).
local CODE = { ${SCRIPT_CODES} }
