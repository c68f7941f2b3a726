-- The biped co-design study (examples/biped_codesign_study.lua) read as the 2^3 factorial experiment it is: each of
-- E, nu and density co-designed or fixed, several controller seeds per combination. Prints each parameter's main
-- effect on the distance walked (mean with it on minus mean with it off, over all the other combinations: every row
-- counts, not only the single-parameter ones), its standard error, the same effect paired within each seed and
-- combination of the others, and how many seeds would bring the standard error of the difference between two main
-- effects to half that difference. Seed 000 (sec. 5.3.2) reports each parameter helping, ordered E > density > nu.
-- Usage: cqlua tools/biped_codesign_effects.lua [results.csv ...] (default docs/results/studies/biped_codesign_results.csv; CSVs of
-- `cqlua study collect`, columns status, E, nu, density, seed, walked; several CSVs pool their rows, e.g. a study
-- grown with CQ_BIPED_FIRST_SEED; a row found twice, the same combination and seed, counts once).
local paths = (arg and #arg > 0) and arg or { "docs/results/studies/biped_codesign_results.csv" }
local PARAMS = { "E", "nu", "density" }
local rows, seen, seed_set, n_seeds = {}, {}, {}, 0
for _, path in ipairs(paths) do
  local f = assert(io.open(path), "cannot read " .. path)
  local header, cols = f:read("*l") or "", {}
  for name in header:gmatch("[^,]+") do cols[#cols + 1] = name end
  for line in f:lines() do
    local r, k = {}, 0
    for v in (line .. ","):gmatch("([^,]*),") do k = k + 1; r[cols[k]] = v end
    local key = table.concat({ tostring(r.E), tostring(r.nu), tostring(r.density), tostring(r.seed) }, "/")
    if r.status == "ok" and tonumber(r.walked) and not seen[key] then
      seen[key] = true
      rows[#rows + 1] = { walked = tonumber(r.walked), seed = r.seed, E = r.E == "true", nu = r.nu == "true",
        density = r.density == "true" }
      if not seed_set[r.seed] then seed_set[r.seed], n_seeds = true, n_seeds + 1 end
    end
  end
  f:close()
end

local function mean(xs) local s = 0 for _, x in ipairs(xs) do s = s + x end return s / #xs end
local function var(xs) -- sample variance
  local m, s = mean(xs), 0
  for _, x in ipairs(xs) do s = s + (x - m) ^ 2 end
  return s / (#xs - 1)
end
-- the key of a row without parameter p: its seed and the other parameters' settings
local function others(r, p)
  local key = { r.seed }
  for _, q in ipairs(PARAMS) do if q ~= p then key[#key + 1] = tostring(r[q]) end end
  return table.concat(key, "/")
end

print(string.format("%d finished rows, %d seeds (%s)", #rows, n_seeds, table.concat(paths, ", ")))
print(string.format("%-8s %12s %8s %6s | %14s %8s", "param", "main effect", "s.e.", "t", "paired (n)", "s.e."))
local effects = {}
for _, p in ipairs(PARAMS) do
  local on, off, by_key = {}, {}, {}
  for _, r in ipairs(rows) do
    if r[p] then on[#on + 1] = r.walked else off[#off + 1] = r.walked end
    by_key[others(r, p)] = by_key[others(r, p)] or {}
    by_key[others(r, p)][r[p]] = r.walked
  end
  local d, se = mean(on) - mean(off), math.sqrt(var(on) / #on + var(off) / #off)
  local diffs = {}
  for _, pair in pairs(by_key) do
    if pair[true] and pair[false] then diffs[#diffs + 1] = pair[true] - pair[false] end
  end
  local pse = math.sqrt(var(diffs) / #diffs)
  effects[#effects + 1] = { p = p, d = d, se = se }
  print(string.format("%-8s %+12.3f %8.3f %6.2f | %+9.3f (%2d) %8.3f", p, d, se, d / se, mean(diffs), #diffs, pse))
end
table.sort(effects, function(a, b) return a.d > b.d end)
local order = {}
for i, e in ipairs(effects) do order[i] = e.p end
print("ordering by main effect: " .. table.concat(order, " > ") .. " (seed 000: E > density > nu)")
-- seeds per combination for the s.e. of the difference of two main effects to be half that difference (the s.e.
-- falls as 1 / sqrt(seeds))
local seeds = n_seeds
for i = 1, #effects - 1 do
  for j = i + 1, #effects do
    local a, b = effects[i], effects[j]
    local gap, se = a.d - b.d, math.sqrt(a.se ^ 2 + b.se ^ 2)
    print(string.format("%s - %s: %+.3f, s.e. %.3f now (%d seeds); about %d seeds for a s.e. of half the gap", a.p,
      b.p, gap, se, seeds, math.ceil(seeds * (se / (gap / 2)) ^ 2)))
  end
end
