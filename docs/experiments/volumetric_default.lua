-- Issue 62 item 1: which volumetric term is the right default for nearly incompressible solids, by measurement.
-- The cantilever of tests/volumetric_spec.lua (Mooney-Rivlin, shear modulus 6 kPa, 0.5 x 1/16 m, dx = 1/64, 4
-- particles per cell, clamped in a sticky wall, gravity 10, damping 20/s, implicit 2 ms) for each term:
--   particle   each particle's own J                                  (volumetric = "particle")
--   current    averaged per node, groups by the current node, own 1  (volumetric = "averaged", its recorded defaults)
--   solids     averaged per node, groups of the initial state, own 16 (the default, volumetric = "solids")
-- (1) the settled sag against Timoshenko's plane-strain incompressible beam at bulk / shear 1e2, 1e3, 1e4;
-- (2) dL/dc10 of L = the tip's mean height after 0.2 s (the beam swinging down, particles crossing cell middles)
--     against central differences at relative steps 1e-3 .. 1e-6 (f64), and dL/dy0 of the same L, y0 the whole
--     beam's initial height (the body placed differently against the grid) at steps 1e-4 .. 1e-7 m.
-- Run: cqlua docs/experiments/volumetric_default.lua [ratios=1e2,1e3,1e4] [steps=100]
local cq = require "cq"

local MU, H, DX = 6000, 1 / 16, 1 / 64
local function cantilever(volumetric, ratio)
  local r = cq.robot { dim = 2 }
  r:box { offset = { 0.02, 0.5 }, size = { 0.5, H }, spacing = DX / 2,
    material = { model = "mooney_rivlin", c10 = MU / 2, c01 = 0, bulk = ratio * MU, density = 1 } }
  return r:world { res = { 64, 64 }, dx = DX, dt = 2e-3, gravity = { 0, -10 }, damping = 20, threads = 1,
    walls = { left = { type = "sticky", thickness = 3 } }, integrator = "implicit", precision = "f64",
    volumetric = volumetric, implicit = { tol = 1e-10 } }
end

local function tip_of(s)
  local maxx, tip = -1, {}
  for p = 0, s.n - 1 do maxx = math.max(maxx, s.x[p]) end
  for p = 0, s.n - 1 do if s.x[p] > maxx - 1e-9 then tip[#tip + 1] = p + 1 end end
  return tip, maxx + DX / 4 - 3 * DX
end

local ratios = {}
for v in ((arg and arg[1]) or "1e2,1e3,1e4"):gmatch("[^,]+") do ratios[#ratios + 1] = tonumber(v) end
local STEPS = tonumber(arg and arg[2]) or 100
local TERMS = { "particle", "averaged", "solids" }
local NAME = { particle = "particle", averaged = "current", solids = "solids (default)" }

print("(1) settled sag (300 steps of 2 ms) over Timoshenko's")
print("| bulk / shear | " .. table.concat({ NAME.particle, NAME.averaged, NAME.solids }, " | ") .. " | Timoshenko (mm) |")
print("| --- | --- | --- | --- | --- |")
for _, ratio in ipairs(ratios) do
  local row, beam = {}, nil
  for _, term in ipairs(TERMS) do
    local w, s = cantilever(term, ratio)
    local tip, L = tip_of(s)
    local y0 = s:mean("x", tip)[2]
    for _ = 1, 300 do w:step(s) end
    local sag = y0 - s:mean("x", tip)[2]
    beam = 3 * 10 * L ^ 4 / (8 * MU * H * H) + 10 * L * L / (2 * (5 / 6) * MU)
    row[#row + 1] = string.format("%.4f", sag / beam)
    w:release()
  end
  print(string.format("| %g | %s | %.3f |", ratio, table.concat(row, " | "), 1e3 * beam))
end

print(string.format("\n(2) dL/dc10, L = the tip's mean height after %d steps (%.2f s), against central differences", STEPS,
  STEPS * 2e-3))
print("| bulk / shear | term | derivative (adjoint) | FD at the largest step | ... | the smallest | rel. error, two smallest steps |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for _, ratio in ipairs(ratios) do
  for _, term in ipairs(TERMS) do
    local w, s0 = cantilever(term, ratio)
    local tip = tip_of(s0)
    local memo = w:memo { steps = STEPS }
    local base = {}
    for p = 0, w.n - 1 do base[p] = w.params.c10[p] end
    local function loss()
      memo:begin(s0)
      for _ = 1, STEPS do memo:step() end
      return memo.state:mean("x", tip)[2]
    end
    loss()
    -- memo.grad.x after the backward: dL/dx of the initial state
    memo:backward(function(k, m)
      if k == STEPS then for _, p in ipairs(tip) do m.grad.x[w.n + p - 1] = m.grad.x[w.n + p - 1] + 1 / #tip end end
    end)
    local g = 0
    for p = 0, w.n - 1 do g = g + memo.grad_params.c10[p] * base[p] end -- d/d(log c10): a relative change
    local fds, worst = {}, 0
    for _, h in ipairs { 1e-3, 1e-4, 1e-5, 1e-6 } do
      local function at(t)
        w:fill("c10", function(p) return base[p - 1] * (1 + t) end)
        return loss()
      end
      local fd = (at(h) - at(-h)) / (2 * h)
      at(0)
      fds[#fds + 1] = string.format("%.6e", fd)
      if h < 1e-4 then worst = math.max(worst, math.abs(fd - g) / math.abs(g)) end
    end
    print(string.format("| %g | %s | dL/dc10 %.6e | %s | %.1e |", ratio, NAME[term], g, table.concat(fds, " | "), worst))
    -- dL/dy0: every particle's initial y moved by t
    local gy = 0
    for p = 0, w.n - 1 do gy = gy + memo.grad.x[w.n + p] end
    fds, worst = {}, 0
    for _, h in ipairs { 1e-4, 1e-5, 1e-6, 1e-7 } do
      local function at(t)
        local s = s0:copy()
        for p = 0, w.n - 1 do s.x[w.n + p] = s.x[w.n + p] + t end
        memo:begin(s)
        for _ = 1, STEPS do memo:step() end
        return memo.state:mean("x", tip)[2]
      end
      local fd = (at(h) - at(-h)) / (2 * h)
      fds[#fds + 1] = string.format("%.6e", fd)
      if h < 1e-5 then worst = math.max(worst, math.abs(fd - gy) / math.abs(gy)) end
    end
    print(string.format("| %g | %s | dL/dy0 %.6e | %s | %.1e |", ratio, NAME[term], gy, table.concat(fds, " | "), worst))
    w:release()
  end
end
