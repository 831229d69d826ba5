-- plumb's script sandbox, run once in every fresh Lua state before the user's script.
-- Arguments (from Rust): the redis.* functions written in Rust (C functions to Lua, so
-- an error they raise keeps the calling line, even from `return redis.call(...)`, which a
-- Lua function would lose to the tail call), the budget flag, the text of the error the
-- last of them raised, the seeded generator, KEYS and ARGV.
local rust, exceeded, take_raised, rand_next, rand_seed, keys, argv = ...

local getinfo, raw_getmetatable = debug.getinfo, debug.getmetatable
local type, error, select, rawget, rawset, next, setmetatable, tonumber =
  type, error, select, rawget, rawset, next, setmetatable, tonumber
local rawtostring, rawpcall, rawxpcall, rawloadstring = tostring, pcall, xpcall, loadstring
local sbyte, sformat, concat, floor, ceil = string.byte, string.format, table.concat, math.floor, math.ceil
local resume = coroutine.resume
local G = _G

-- Neither in Redis' sandbox nor safe in ours (files, the clock, environments, the debugger).
debug, print, dofile, loadfile, setfenv, getfenv, newproxy, module, require = nil, nil, nil, nil, nil, nil, nil, nil, nil
package, os, io = nil, nil, nil

-- The instruction budget: once it is spent, no pcall may swallow the error, so the script
-- unwinds to the top whatever it catches.
local function pass(ok, ...)
  if not ok and exceeded() then error((...), 0) end
  return ok, ...
end
pcall = function(...) return pass(rawpcall(...)) end
-- xpcall runs the handler after the error unwound, as a plain call: Lua 5.1 runs a handler
-- with hooks off when the error came from a hook, so a handler that loops would escape the
-- budget. Scripts have no debug library, so a handler cannot tell the difference.
local function handled(h, ok, ...)
  if ok then return true, ... end
  if exceeded() then error((...), 0) end
  return false, (h((...)))
end
xpcall = function(f, h) return handled(h, rawpcall(f)) end
coroutine.resume = function(...) return pass(resume(...)) end

-- tostring of a table, function, coroutine or userdata shows its address in stock Lua, which
-- differs between replicas; here it shows a number counted in the order first shown.
local ids, last = setmetatable({}, {__mode = 'k'}), 0
local by_reference = {table = true, ['function'] = true, thread = true, userdata = true}
tostring = function(...)
  local v = ...
  if select('#', ...) > 0 and by_reference[type(v)] then
    local mt = raw_getmetatable(v)
    if not (mt and rawget(mt, '__tostring')) then
      local id = ids[v]
      if not id then
        last = last + 1
        id = last
        ids[v] = id
      end
      return type(v) .. ': ' .. sformat('0x%08x', id)
    end
  end
  return rawtostring(...)
end

-- Source only: Lua 5.1 does not check bytecode, and crafted bytecode can break the VM.
loadstring = function(s, name)
  if type(s) == 'string' and sbyte(s, 1) == 27 then
    return nil, 'loading bytecode is not allowed'
  end
  return rawloadstring(s, name)
end
load = function(f, name)
  if type(f) ~= 'function' then return loadstring(f, name) end
  local parts = {}
  while true do
    local part = f()
    if part == nil or part == '' then break end
    if type(part) ~= 'string' then return nil, 'reader function must return a string' end
    parts[#parts + 1] = part
  end
  return loadstring(concat(parts), name)
end

-- math.random and math.randomseed as Lua 5.1 defines them, drawing from the request's seed.
local function checkint(x, n)
  local v = tonumber(x)
  if v == nil then
    error("bad argument #" .. n .. " to 'random' (number expected, got " .. type(x) .. ")", 3)
  end
  if v >= 0 then return floor(v) end
  return ceil(v)
end
math.random = function(...)
  local n = select('#', ...)
  local r = rand_next()
  if n == 0 then return r end
  if n > 2 then error('wrong number of arguments', 2) end
  local a, b = ...
  local l, u
  if n == 1 then l, u = 1, checkint(a, 1) else l, u = checkint(a, 1), checkint(b, 2) end
  if l > u then error("bad argument #" .. n .. " to 'random' (interval is empty)", 2) end
  return floor(r * (u - l + 1)) + l
end
math.randomseed = function(x)
  local v = tonumber(x)
  if v == nil then
    error("bad argument #1 to 'randomseed' (number expected, got " .. type(x) .. ")", 2)
  end
  rand_seed(v)
end

-- The redis table, as Redis 7.0 has it (RESP2 only).
redis = {
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REPL_NONE = 0, REPL_AOF = 1, REPL_SLAVE = 2, REPL_REPLICA = 2, REPL_ALL = 3,
  call = rust.call, pcall = rust.pcall, sha1hex = rust.sha1hex, log = rust.log,
  setresp = rust.setresp, set_repl = rust.set_repl,
}
redis.error_reply = function(...)
  local e = ...
  if select('#', ...) ~= 1 or type(e) ~= 'string' then
    return {err = 'ERR wrong number or type of arguments'}
  end
  -- Redis keeps a leading code ("-CODE message" or "CODE message") and gives others ERR.
  if sbyte(e, 1) == 45 then e = e:sub(2) end
  if not e:find(' ', 1, true) then e = 'ERR ' .. e end
  return {err = e}
end
redis.status_reply = function(...)
  local s = ...
  if select('#', ...) ~= 1 or type(s) ~= 'string' then
    return {err = 'ERR wrong number or type of arguments'}
  end
  return {ok = s}
end
redis.replicate_commands = function() return true end
redis.breakpoint = function() return false end
redis.debug = function() end

-- Where a script's error happened, and its text, as Redis 7.0 reports them: an error table's
-- `err`, or ERR and the text of anything else raised.
local function handler(e)
  local line
  local level = 2
  while true do
    local info = getinfo(level, 'Sl')
    if not info then break end
    if info.source == '@user_script' then
      line = info.currentline
      break
    end
    level = level + 1
  end
  local text
  if type(e) == 'userdata' then
    -- Raised by one of the Rust functions: its text is kept aside.
    text = take_raised()
  end
  if text then
    -- (set above)
  elseif type(e) == 'table' then
    text = rawget(e, 'err')
    if type(text) ~= 'string' then text = 'ERR unknown error' end
  else
    text = 'ERR ' .. rawtostring(e)
  end
  return {err = text, line = line}
end

KEYS, ARGV = keys, argv

-- Globals, as Redis 7.0 has them: none may be set or changed, and reading an absent one is
-- an error. They move to a table behind an empty _G, so every assignment reaches
-- __newindex; each is still a stock global to the script.
local globals, names = {}, {}
for k, v in next, G do
  globals[k] = v
  names[#names + 1] = k
end
for i = 1, #names do rawset(G, names[i], nil) end
setmetatable(globals, {
  __index = function(_, k)
    error("Script attempted to access nonexistent global variable '" .. rawtostring(k) .. "'", 2)
  end,
})
setmetatable(G, {
  __index = globals,
  __newindex = function() error('Attempt to modify a readonly table', 2) end,
  __metatable = false,
})

return function(f) return rawxpcall(f, handler) end
