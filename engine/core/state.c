/* States: one host block holding every field of CQ_STATE_FIELDS (fields.h), laid out in table order. */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

void cqi_state_locate(long i, int n, int dim, const char** field, int* particle, int* component) {
  long off = 0;
#define CQI_FIND(name, shape, init, doc)                                                 \
  if (i >= off && i < off + cqi_field_len(shape, n, dim)) {                              \
    *field = #name, *particle = (int)((i - off) % n), *component = (int)((i - off) / n); \
    return;                                                                              \
  }                                                                                      \
  off += cqi_field_len(shape, n, dim);
  CQ_STATE_FIELDS(CQI_FIND)
#undef CQI_FIND
  *field = "?", *particle = -1, *component = -1;
}

cq_state* cqi_state_alloc_on(const cqi_backend_ops* ops, int dim, int n) {
  cq_state* s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->real_bits = CQ_REAL_BITS;
  s->dim = dim;
  s->n = n;
  s->block_len = cqi_state_len(n, dim);
  size_t bytes = sizeof(cq_real) * (size_t)s->block_len;
  s->block = ops && ops->shared_alloc ? ops->shared_alloc(bytes) : NULL;
  s->shared = s->block != NULL;
  if (s->shared)
    s->free_block = ops->shared_free;
  else if (ops && ops->host_alloc && (s->block = ops->host_alloc(bytes)) != NULL)
    s->free_block = ops->host_free;
  else
    s->block = calloc((size_t)s->block_len, sizeof(cq_real)), s->free_block = free;
  if (!s->block) return free(s), NULL;
  s->p = cqi_particles_view(s->block, n, dim);
  return s;
}

cq_state* cq_state_create(const cq_world* w) {
  int n = w->model.n, D = w->model.dim;
  cq_state* s = cqi_state_alloc_on(w->be->ops, D, n);
  if (!s) return NULL;
#define CQI_INIT(name, shape, init, doc) \
  if ((init) == CQ_INIT_IDENTITY)        \
    for (int a = 0; a < D; a++)          \
      for (int p = 0; p < n; p++) s->p.name[(a * D + a) * (long)n + p] = 1;
  CQ_STATE_FIELDS(CQI_INIT)
#undef CQI_INIT
  return s;
}

void cq_state_free(cq_state* s) {
  if (!s) return;
  s->free_block(s->block);
  free(s);
}

void* cq_state_field(cq_state* s, const char* name) {
#define CQI_FIND(fname, shape, init, doc) \
  if (strcmp(name, #fname) == 0) return s->p.fname;
  CQ_STATE_FIELDS(CQI_FIND)
#undef CQI_FIND
  return NULL;
}

int cq_state_read(cq_world* w, const cq_state* s, const char* name, double* out) {
  if (!s || s->real_bits != CQ_REAL_BITS || s->n != w->model.n || s->dim != w->model.dim)
    return cqi_errorf(&w->err, CQ_ERR_ARG, "read: s must be a state of this world (%d particles in %dD)", w->model.n,
                      w->model.dim);
  const cq_real* src = NULL;
  long len = 0;
#define CQI_FIND(fname, shape, init, doc) \
  if (!src && strcmp(name, #fname) == 0) src = s->p.fname, len = cqi_field_len(shape, s->n, s->dim);
  CQ_STATE_FIELDS(CQI_FIND)
#undef CQI_FIND
  if (!src) return cqi_errorf(&w->err, CQ_ERR_ARG, "read: no state field '%s'", name);
  cqi_backend* be = w->be;
  if (s->shared && !be->ops->host_memory) return be->ops->read(be, src, len, out); /* where its pages are */
  for (long i = 0; i < len; i++) out[i] = (double)src[i];
  return CQ_OK;
}

long cq_state_substep(const cq_state* s) { return s->substep; }
void cq_state_set_substep(cq_state* s, long k) { s->substep = k; }

int cq_state_copy(cq_state* dst, const cq_state* src) {
  if (dst->real_bits != src->real_bits || src->real_bits != CQ_REAL_BITS || dst->block_len != src->block_len)
    return CQ_ERR_ARG;
  memcpy(dst->block, src->block, sizeof(cq_real) * src->block_len);
  dst->substep = src->substep;
  return CQ_OK;
}
