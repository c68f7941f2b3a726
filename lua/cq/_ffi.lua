-- Private: the C declarations of engine/cq.h and loading of the float32 / float64 engine libraries.
local ffi = require "ffi"

ffi.cdef [[
typedef struct cq_world cq_world;
typedef struct cq_state cq_state;
typedef struct cq_memo cq_memo;
typedef struct cq_wall_desc {
  int type; double friction; int thickness; double velocity[3]; double osc_amplitude[3]; double osc_omega; double osc_phase;
} cq_wall_desc;
typedef struct cq_world_desc {
  int dim; int res[3]; double dx; double dt; int substeps; double gravity[3]; double damping;
  int n_particles; int n_actuators; int threads; cq_wall_desc walls[6];
} cq_world_desc;
int cq_real_bits(void);
const char* cq_version(void);
void cq_world_desc_default(cq_world_desc* d);
cq_world* cq_world_create(const cq_world_desc* d, char* err, int errlen);
void cq_world_free(cq_world* w);
const char* cq_world_error(const cq_world* w);
int cq_world_dim(const cq_world* w);
int cq_world_n(const cq_world* w);
void* cq_world_param(cq_world* w, const char* name);
int cq_world_set_actuator(cq_world* w, int a, int kind);
int cq_world_set_node_bcs(cq_world* w, int count, const int* nodes, const double* normals, int type, double friction);
int cq_world_add_cable(cq_world* w, int actuator, int count, const int* particles, double k, double rest);
int cq_world_enable_user_forces(cq_world* w);
int cq_world_commit(cq_world* w);
double cq_world_stable_dt(const cq_world* w);
int cq_world_set_threads(cq_world* w, int threads);
int cq_world_set_backend(cq_world* w, int backend);
int cq_world_backend(const cq_world* w);
int cq_cuda_device_count(char* err, int errlen);
int cq_cuda_device_info(char* buf, int len);
double cq_cuda_memcpy_bandwidth(double bytes, int reps, char* err, int errlen);
int cq_field_info(int kind, int index, const char** name, int* type, int* shape, int* differentiable, const char** doc);
cq_state* cq_state_create(const cq_world* w);
void cq_state_free(cq_state* s);
void* cq_state_field(cq_state* s, const char* name);
long cq_state_substep(const cq_state* s);
void cq_state_set_substep(cq_state* s, long k);
int cq_state_copy(cq_state* dst, const cq_state* src);
int cq_step(cq_world* w, cq_state* s, const double* u);
int cq_step_force(cq_world* w, cq_state* s, const double* u, const double* force);
int cq_step_ext(cq_world* w, cq_state* s, const double* u, const double* force, const double* stress);
cq_memo* cq_memo_create(cq_world* w, int max_steps, int checkpoint_every);
void cq_memo_free(cq_memo* m);
int cq_memo_begin(cq_memo* m, const cq_state* s0);
int cq_memo_step(cq_memo* m, const double* u);
int cq_memo_step_force(cq_memo* m, const double* u, const double* force);
int cq_memo_step_ext(cq_memo* m, const double* u, const double* force, const double* stress);
void* cq_memo_grad_force(cq_memo* m);
void* cq_memo_grad_stress(cq_memo* m);
cq_state* cq_memo_state(cq_memo* m);
int cq_memo_steps(const cq_memo* m);
int cq_memo_stored_states(const cq_memo* m);
const double* cq_memo_act(const cq_memo* m);
int cq_memo_backward_begin(cq_memo* m);
cq_state* cq_memo_grad(cq_memo* m);
int cq_memo_backward_step(cq_memo* m);
int cq_memo_position(const cq_memo* m);
cq_state* cq_memo_backward_state(cq_memo* m);
int cq_memo_backward(cq_memo* m);
double* cq_memo_grad_act(cq_memo* m);
void* cq_memo_grad_param(cq_memo* m, const char* name);
]]

local M = {}
local paths = package.loaded["cq._paths"] or {}
local libs = {}

-- The engine library for a precision ("f32" or "f64"), loaded once; flavor "cuda" = the CUDA build libcq_cuda_*.so.
function M.lib(precision, flavor)
  local key = (flavor or "") .. precision
  if libs[key] then return libs[key] end
  local name = "libcq_" .. (flavor and flavor .. "_" or "") .. precision .. ".so"
  local candidates = {}
  if paths.lib then candidates[#candidates + 1] = paths.lib .. "/" .. name end
  candidates[#candidates + 1] = name
  local errs = {}
  for _, path in ipairs(candidates) do
    local ok, lib = pcall(ffi.load, path)
    if ok then
      libs[key] = lib
      return lib
    end
    errs[#errs + 1] = tostring(lib)
  end
  error("cq: cannot load the engine library " .. name .. " (run `make`): " .. table.concat(errs, "; "), 0)
end

-- The CUDA engine library for a precision when it loads and sees a usable device; else nil and the reason.
-- Probed once per precision.
local cuda_probe = {}
function M.cuda_lib(precision)
  local r = cuda_probe[precision]
  if not r then
    local ok, lib = pcall(M.lib, precision, "cuda")
    if not ok then
      r = { nil, "the CUDA engine library is not built or cannot load: " .. tostring(lib) }
    else
      local err = ffi.new("char[256]")
      local count = lib.cq_cuda_device_count(err, 256)
      r = count > 0 and { lib } or { nil, ffi.string(err) }
    end
    cuda_probe[precision] = r
  end
  return r[1], r[2]
end

M.real_ctype = { f32 = ffi.typeof("float*"), f64 = ffi.typeof("double*") }
M.type_ctype = { [0] = nil, [1] = ffi.typeof("int32_t*"), [2] = ffi.typeof("uint8_t*") }

return M
