-- Optimizers (lua/cq/optim.lua): parameter groups with their own step sizes and bounds, refusal of non-finite
-- steps, and state() / load_state() that make a restored optimizer continue bit for bit.
local cq = require "cq"

local function set_grad(p, g) for i = 0, p.n - 1 do p.g[i] = type(g) == "table" and g[i + 1] or g end end
local function err(f, ...) local ok, e = pcall(f, ...) assert.is_false(ok) return e end

describe("optimizer parameter groups", function()
  it("step each group with its own lr; bounds: explicit, else the group's, else the parameter's own", function()
    local w, E, nu, rho = cq.param { n = 2, init = 0 }, cq.param { n = 1, init = 10 }, cq.param { n = 1, init = 0.3 },
      cq.param { n = 1, init = 1 }
    nu.bounds = { 0.2, 0.4 }  -- a design variable's own bounds
    rho.bounds = { 0.9, 1.1 } -- overridden below
    local opt = cq.sgd { params = { { params = { w }, lr = 1e-3 }, { params = { E }, lr = 0.5, bounds = { 5, 9 } },
      { params = { nu, rho }, lr = 0.5 } }, bounds = { [rho] = { 0, 10 } } }
    set_grad(w, { 1, -2 }); set_grad(E, 4); set_grad(nu, 1); set_grad(rho, -4)
    opt:step()
    assert.are.equal(-1e-3, w.v[0]); assert.are.equal(2e-3, w.v[1]) -- lr 1e-3
    assert.are.equal(8, E.v[0])   -- lr 0.5, inside the group's {5, 9}
    assert.are.equal(0.2, nu.v[0]) -- 0.3 - 0.5 projected onto nu.bounds
    assert.are.equal(3, rho.v[0])  -- 1 + 2: the explicit bounds {0, 10} replace rho.bounds
    set_grad(E, 10)
    opt:step()
    assert.are.equal(5, E.v[0])    -- 8 - 5 = 3, projected onto the group's bounds
    assert.are.equal(1e-3, opt.groups[1].lr)
    opt:scale_lr(0.5)
    assert.are.equal(0.25, opt.groups[2].lr)
    assert.matches("3 parameter groups; read opt.groups%[i%].lr", err(function() return opt.lr end))
  end)

  it("Adam on two groups matches two single-group Adams bit for bit", function()
    local a1, b1 = cq.param { n = 3, init = 1 }, cq.param { n = 2, init = -1 }
    local a2, b2 = cq.param { n = 3, init = 1 }, cq.param { n = 2, init = -1 }
    local both = cq.adam { params = { { params = { a1 }, lr = 0.01 }, { params = { b1 }, lr = 0.3 } } }
    local oa, ob = cq.adam { params = { a2 }, lr = 0.01 }, cq.adam { params = { b2 }, lr = 0.3 }
    for k = 1, 5 do
      for _, p in ipairs { a1, a2 } do set_grad(p, { math.sin(k), k, -k * k }) end
      for _, p in ipairs { b1, b2 } do set_grad(p, { 1 / k, math.cos(k) }) end
      both:step(); oa:step(); ob:step()
    end
    for i = 0, 2 do assert.are.equal(a2.v[i], a1.v[i]) end
    for i = 0, 1 do assert.are.equal(b2.v[i], b1.v[i]) end
  end)
end)

describe("optimizers refuse non-finite steps", function()
  it("a nan or inf gradient raises before any parameter changes", function()
    local p, q = cq.param { n = 2, init = 1 }, cq.param { n = 1, init = 2 }
    q.name = "E"
    local opt = cq.adam { params = { p, q }, lr = 0.1 }
    set_grad(p, 1); set_grad(q, 0 / 0)
    assert.matches("cq.adam:step: the gradient of group 1 parameter 2 %(E%), entry 1, is nan", err(opt.step, opt))
    assert.are.equal(1, p.v[0]); assert.are.equal(2, q.v[0])
    set_grad(q, math.huge)
    assert.matches("is inf", err(opt.step, opt))
    assert.are.equal(0, opt.t)
  end)

  it("an infinite, zero or nan step size is refused when made and when stepping", function()
    local p = cq.param { n = 1, init = 1 }
    assert.matches("cq.adam: lr must be finite %(got inf%)", err(cq.adam, { params = { p }, lr = math.huge }))
    assert.matches("cq.sgd: lr must be > 0 %(got 0%)", err(cq.sgd, { params = { p }, lr = 0 }))
    assert.matches("cq.adam params%[1%]: lr must be a number", err(cq.adam, { params = { { params = { p }, lr = 0 / 0 } } }))
    local opt = cq.adam { params = { p }, lr = 0.1 }
    set_grad(p, 1)
    assert.matches("cq.adam: lr must be finite %(got inf%)", err(function() opt.lr = math.huge end)) -- refused when set
    opt.groups[1].lr = math.huge -- (a group's lr is a plain field: refused when stepping)
    assert.matches("lr of group 1 must be a finite number > 0 %(got inf%)", err(opt.step, opt))
    assert.are.equal(1, p.v[0])
  end)

  it("groups are checked: unknown keys, a parameter in two groups", function()
    local p = cq.param { n = 1, init = 1 }
    assert.matches("unknown option 'rate'", err(cq.sgd, { params = { { params = { p }, rate = 1 } } }))
    assert.matches("appears twice", err(cq.sgd, { params = { { params = { p } }, { params = { p } } } }))
  end)
end)

describe("optimizer state", function()
  it("state() through JSON and load_state() continue Adam, SGD and keep_best bit for bit", function()
    local json = require "cq.json"
    for _, make in ipairs { function(ps) return cq.adam { params = ps, lr = 0.05, clip_norm = 3 } end,
      function(ps) return cq.sgd { params = ps, lr = 0.05, momentum = 0.7 } end } do
      local p1, p2 = cq.param { n = 3, init = 0.5 }, cq.param { n = 3, init = 0.5 }
      local o1 = make({ p1 })
      local keep1 = cq.keep_best { params = { p1 } }
      local function grad(p, k) set_grad(p, { math.sin(k), k * 0.1, 1 / k }) end
      for k = 1, 4 do grad(p1, k); keep1:consider(-k % 3); o1:step() end
      -- a new optimizer over a parameter copied by value, given the saved state
      for i = 0, 2 do p2.v[i] = p1.v[i] end
      local o2, keep2 = make({ p2 }), cq.keep_best { params = { p2 } }
      o2:load_state(json.decode(json.encode(o1:state())))
      keep2:load_state(json.decode(json.encode(keep1:state())))
      for k = 5, 9 do
        grad(p1, k); grad(p2, k)
        keep1:consider(-k % 4); keep2:consider(-k % 4)
        o1:step(); o2:step()
      end
      for i = 0, 2 do assert.are.equal(p1.v[i], p2.v[i]) end
      assert.are.equal(keep1.iteration, keep2.iteration)
      keep1:restore(); keep2:restore()
      for i = 0, 2 do assert.are.equal(p1.v[i], p2.v[i]) end
    end
  end)

  it("load_state checks the kind and the sizes", function()
    local p, q = cq.param { n = 2 }, cq.param { n = 3 }
    local st = cq.adam { params = { p } }:state()
    assert.matches("state must be the state%(%) of a cq.sgd", err(function() cq.sgd { params = { p } }:load_state(st) end))
    assert.matches("slot m of parameter 1 must have 3 values", err(function() cq.adam { params = { q } }:load_state(st) end))
  end)
end)
