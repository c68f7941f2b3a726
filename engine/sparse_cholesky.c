/* Supernodal multifrontal sparse Cholesky (sparse_cholesky.h). Three parts:
 *   analysis   METIS's nested dissection of the node graph, the elimination tree (Liu's algorithm) and its postorder,
 *              each column's node structure, fundamental supernodes relaxed into larger ones (CHOLMOD's default
 *              rule), and the sizes of the panels and of the update-matrix stack; all at node level (bs x bs blocks)
 *   factor     per supernode, in postorder: the frontal matrix from A's blocks and the children's update matrices
 *              (extend-add), then dpotrf, dtrsm and dsyrk; the panel is kept, the update matrix pushed on a stack
 *   solve      forward and backward substitution by supernodes (dtrsv, dgemv)
 * Fronts and panels are column-major with leading dimension f, the front's order in unknowns. */
#include "sparse_cholesky.h"
#include <metis.h>
#include <stdlib.h>
#include <string.h>

/* LAPACK and BLAS (Fortran symbols; the system's BLAS, OpenBLAS in the Makefile's packages). */
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info);
void dtrsm_(const char* side, const char* uplo, const char* transa, const char* diag, const int* m, const int* n,
            const double* alpha, const double* a, const int* lda, double* b, const int* ldb);
void dsyrk_(const char* uplo, const char* trans, const int* n, const int* k, const double* alpha, const double* a,
            const int* lda, const double* beta, double* c, const int* ldc);
void dtrsv_(const char* uplo, const char* trans, const char* diag, const int* n, const double* a, const int* lda,
            double* x, const int* incx);
void dgemv_(const char* trans, const int* m, const int* n, const double* alpha, const double* a, const int* lda,
            const double* x, const int* incx, const double* beta, double* y, const int* incy);

struct cqi_chol {
  /* the pattern the analysis is for */
  long n;
  int bs, width;
  int32_t* pattern; /* [n][width], a copy of A.col */
  int analysed;
  /* ordering: node perm[k] of A is column k of L; iperm is its inverse */
  int32_t *perm, *iperm;
  /* supernodes: columns first[s] .. first[s + 1] - 1 (contiguous), the node rows below them rows[rptr[s] ..
   * rptr[s + 1]) (sorted), their number of children in the supernodal tree, their panel's offset in L */
  long ns;
  int32_t *first, *rows, *nchild;
  int64_t *rptr, *lptr;
  double* L;
  /* workspace */
  double *front, *stack, *xw;
  size_t front_len, stack_len;
  int32_t* map; /* [n] local node position in the current front */
  double entries, flops;
  int factored;
};

cqi_chol* cqi_chol_create(void) { return calloc(1, sizeof(cqi_chol)); }

static void drop_analysis(cqi_chol* c) {
  free(c->pattern), free(c->perm), free(c->iperm), free(c->first), free(c->rows), free(c->nchild);
  free(c->rptr), free(c->lptr), free(c->L), free(c->front), free(c->stack), free(c->xw), free(c->map);
  c->pattern = c->perm = c->iperm = c->first = c->rows = c->nchild = c->map = NULL;
  c->rptr = c->lptr = NULL;
  c->L = c->front = c->stack = c->xw = NULL;
  c->analysed = c->factored = 0;
}

void cqi_chol_free(cqi_chol* c) {
  if (!c) return;
  drop_analysis(c);
  free(c);
}

void cqi_chol_stats(const cqi_chol* c, double* entries, double* flops) {
  *entries = c->entries;
  *flops = c->flops;
}

static int cmp_i32(const void* a, const void* b) {
  int32_t x = *(const int32_t*)a, y = *(const int32_t*)b;
  return (x > y) - (x < y);
}

/* Nested dissection of A's node graph: perm[new] = old, iperm[old] = new. */
static int order(cqi_chol* c, const cqi_block_matrix* A) {
  long n = A->n, ne = 0;
  for (long k = 0; k < n * A->width; k++) ne += A->col[k] >= 0 && A->col[k] != k / A->width;
  idx_t nv = (idx_t)n, *xadj = malloc(sizeof(idx_t) * (n + 1)), *adj = malloc(sizeof(idx_t) * (ne > 0 ? ne : 1));
  idx_t *perm = malloc(sizeof(idx_t) * n), *iperm = malloc(sizeof(idx_t) * n);
  int st = CQI_CHOL_OK;
  if (!xadj || !adj || !perm || !iperm) {
    st = CQI_CHOL_NOMEM;
  } else {
    long e = 0;
    for (long i = 0; i < n; i++) {
      xadj[i] = (idx_t)e;
      for (int o = 0; o < A->width; o++) {
        int32_t j = A->col[i * A->width + o];
        if (j >= 0 && j != i) adj[e++] = j;
      }
    }
    xadj[n] = (idx_t)e;
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options); /* a fixed seed: the same order for the same graph */
    if (n > 1 && METIS_NodeND(&nv, xadj, adj, NULL, options, perm, iperm) != METIS_OK) st = CQI_CHOL_ORDER;
    for (long i = 0; st == CQI_CHOL_OK && i < n; i++) {
      c->perm[i] = n > 1 ? (int32_t)perm[i] : 0;
      c->iperm[i] = n > 1 ? (int32_t)iperm[i] : 0;
    }
  }
  free(xadj), free(adj), free(perm), free(iperm);
  return st;
}

/* Runs the statements ... for each neighbour j != k of column k through A (both in L's order). */
#define CQI_FOR_NEIGHBOURS(c, A, k, j, ...)                       \
  do {                                                            \
    const int32_t* row_ = (A)->col + (long)(c)->perm[k] * (A)->width; \
    for (int o_ = 0; o_ < (A)->width; o_++) {                     \
      if (row_[o_] < 0) continue;                                 \
      int32_t j = (c)->iperm[row_[o_]];                           \
      if (j != (k)) { __VA_ARGS__ }                               \
    }                                                             \
  } while (0)

/* The elimination tree of A in the order perm (Liu's algorithm with path compression), then a postorder of it
 * folded into perm/iperm; parent[] is left in the postordered numbering. */
static int etree_postorder(cqi_chol* c, const cqi_block_matrix* A, int32_t* parent) {
  long n = A->n;
  int32_t *anc = malloc(sizeof(int32_t) * n), *head = malloc(sizeof(int32_t) * n);
  int32_t *next = malloc(sizeof(int32_t) * n), *post = malloc(sizeof(int32_t) * n);
  int32_t *stack = malloc(sizeof(int32_t) * n), *np = malloc(sizeof(int32_t) * n);
  int st = CQI_CHOL_OK;
  if (!anc || !head || !next || !post || !stack || !np) {
    st = CQI_CHOL_NOMEM;
    goto done;
  }
  for (long k = 0; k < n; k++) {
    parent[k] = anc[k] = -1;
    CQI_FOR_NEIGHBOURS(c, A, k, i, {
      while (i != -1 && i < k) {
        int32_t up = anc[i];
        anc[i] = (int32_t)k;
        if (up == -1) parent[i] = (int32_t)k;
        i = up;
      }
    });
  }
  /* children in increasing order; a depth-first postorder from each root in increasing order */
  for (long k = 0; k < n; k++) head[k] = -1;
  for (long k = n - 1; k >= 0; k--)
    if (parent[k] >= 0) next[k] = head[parent[k]], head[parent[k]] = (int32_t)k;
  long m = 0;
  for (long r = 0; r < n; r++) {
    if (parent[r] >= 0) continue;
    long top = 0;
    stack[top++] = (int32_t)r;
    while (top > 0) {
      int32_t v = stack[top - 1], ch = head[v];
      if (ch >= 0) {
        head[v] = next[ch];
        stack[top++] = ch;
      } else {
        top--;
        post[m++] = v;
      }
    }
  }
  /* new column k is old column post[k] */
  for (long k = 0; k < n; k++) anc[post[k]] = (int32_t)k; /* anc: the postorder's inverse */
  for (long k = 0; k < n; k++) {
    int32_t p = parent[post[k]];
    np[k] = p >= 0 ? anc[p] : -1;
    stack[k] = c->perm[post[k]];
  }
  memcpy(parent, np, sizeof(int32_t) * n);
  memcpy(c->perm, stack, sizeof(int32_t) * n);
  for (long k = 0; k < n; k++) c->iperm[c->perm[k]] = (int32_t)k;
done:
  free(anc), free(head), free(next), free(post), free(stack), free(np);
  return st;
}

/* Each column's node structure in L (itself first, then the rows below it, sorted): its neighbours below it in A and
 * its children's structures less the children. Into *sptr / *sidx (allocated here). */
static int column_structures(cqi_chol* c, const cqi_block_matrix* A, const int32_t* parent, int64_t** sptr,
                             int32_t** sidx) {
  long n = A->n;
  int64_t cap = 4 * n * (A->width > 8 ? 8 : A->width) + 16, len = 0;
  int64_t* ptr = malloc(sizeof(int64_t) * (n + 1));
  int32_t *idx = malloc(sizeof(int32_t) * cap), *mark = malloc(sizeof(int32_t) * n);
  int32_t *head = malloc(sizeof(int32_t) * n), *next = malloc(sizeof(int32_t) * n);
  int st = CQI_CHOL_OK;
  if (!ptr || !idx || !mark || !head || !next) {
    st = CQI_CHOL_NOMEM;
    goto done;
  }
  for (long k = 0; k < n; k++) mark[k] = -1, head[k] = -1;
  for (long k = n - 1; k >= 0; k--)
    if (parent[k] >= 0) next[k] = head[parent[k]], head[parent[k]] = (int32_t)k;
  for (long k = 0; k < n; k++) {
    ptr[k] = len;
    /* at most: itself, its width neighbours and its children's rows */
    int64_t need = 1 + A->width;
    for (int32_t ch = head[k]; ch >= 0; ch = next[ch]) need += ptr[ch + 1] - ptr[ch];
    if (len + need > cap) {
      cap = 2 * (len + need);
      int32_t* grown = realloc(idx, sizeof(int32_t) * cap);
      if (!grown) {
        st = CQI_CHOL_NOMEM;
        goto done;
      }
      idx = grown;
    }
    idx[len++] = (int32_t)k;
    mark[k] = (int32_t)k;
    CQI_FOR_NEIGHBOURS(c, A, k, j, {
      if (j > k && mark[j] != k) mark[j] = (int32_t)k, idx[len++] = j;
    });
    for (int32_t ch = head[k]; ch >= 0; ch = next[ch])
      for (int64_t q = ptr[ch] + 1; q < ptr[ch + 1]; q++) {
        int32_t j = idx[q];
        if (mark[j] != k) mark[j] = (int32_t)k, idx[len++] = j;
      }
    qsort(idx + ptr[k] + 1, (size_t)(len - ptr[k] - 1), sizeof(int32_t), cmp_i32);
  }
  ptr[n] = len;
done:
  free(mark), free(head), free(next);
  if (st != CQI_CHOL_OK) {
    free(ptr), free(idx);
    ptr = NULL, idx = NULL;
  }
  *sptr = ptr;
  *sidx = idx;
  return st;
}

/* Supernodes: fundamental ones (a column whose only child is the previous column and whose structure is that
 * column's less it), then each one merged into its parent while the parent is the next one and the merge adds few
 * explicit zeros (CHOLMOD's default relaxation: always up to 4 columns, up to 16 with < 80 % zeros, up to 48 with
 * < 10 %, any size with < 5 %). Fills first, rows, rptr, nchild, lptr and the workspace sizes. */
static int supernodes(cqi_chol* c, long n, int bs, const int32_t* parent, const int64_t* sptr, const int32_t* sidx) {
  int32_t* nkids = calloc(n > 0 ? n : 1, sizeof(int32_t));
  int64_t *sk = malloc(sizeof(int64_t) * (n + 1)), *sb = malloc(sizeof(int64_t) * (n + 1));
  double* snz = malloc(sizeof(double) * (n + 1));
  int32_t* sf = malloc(sizeof(int32_t) * (n + 1));
  int st = CQI_CHOL_OK;
  if (!nkids || !sk || !sb || !snz || !sf) {
    st = CQI_CHOL_NOMEM;
    goto done;
  }
  for (long k = 0; k < n; k++)
    if (parent[k] >= 0) nkids[parent[k]]++;
  long m = 0;
  for (long k = 0; k < n; k++) {
    int64_t cnt = sptr[k + 1] - sptr[k];
    if (m > 0 && parent[k - 1] == k && nkids[k] == 1 && sptr[k] - sptr[k - 1] == cnt + 1) {
      sk[m - 1]++, sb[m - 1] = cnt - 1, snz[m - 1] += (double)cnt; /* extends the fundamental supernode */
    } else {
      sf[m] = (int32_t)k, sk[m] = 1, sb[m] = cnt - 1, snz[m] = (double)cnt;
      m++;
    }
    /* relax: merge the previous supernode into this one while it is a child of it */
    while (m >= 2) {
      long C = m - 2, P = m - 1;
      int32_t par = parent[sf[C] + sk[C] - 1];
      if (par < sf[P] || par >= sf[P] + sk[P]) break;
      double kk = (double)(sk[C] + sk[P]), total = kk * (kk + 1) / 2 + kk * (double)sb[P];
      double z = 1 - (snz[C] + snz[P]) / total;
      if (!(kk <= 4 || (kk <= 16 && z < 0.8) || (kk <= 48 && z < 0.1) || z < 0.05)) break;
      sk[C] += sk[P], sb[C] = sb[P], snz[C] += snz[P];
      m--;
    }
  }
  c->ns = m;
  c->first = malloc(sizeof(int32_t) * (m + 1));
  c->rptr = malloc(sizeof(int64_t) * (m + 1));
  c->lptr = malloc(sizeof(int64_t) * (m + 1));
  c->nchild = calloc(m > 0 ? m : 1, sizeof(int32_t));
  int64_t nrows = 0;
  for (long s = 0; s < m; s++) nrows += sb[s];
  c->rows = malloc(sizeof(int32_t) * (nrows > 0 ? nrows : 1));
  int32_t* sn_of = malloc(sizeof(int32_t) * (n > 0 ? n : 1));
  if (!c->first || !c->rptr || !c->lptr || !c->nchild || !c->rows || !sn_of) {
    free(sn_of);
    st = CQI_CHOL_NOMEM;
    goto done;
  }
  /* rows below supernode s: its last column's structure less that column; sizes of panels, fronts and the stack */
  int64_t r = 0, l = 0, stack = 0, stack_peak = 0, front_peak = 0;
  c->entries = c->flops = 0;
  for (long s = 0; s < m; s++) {
    c->first[s] = sf[s];
    c->rptr[s] = r;
    c->lptr[s] = l;
    int32_t last = (int32_t)(sf[s] + sk[s] - 1);
    for (int64_t q = sptr[last] + 1; q < sptr[last + 1]; q++) c->rows[r++] = sidx[q];
    for (int32_t k = sf[s]; k <= last; k++) sn_of[k] = (int32_t)s;
    double fc = (double)sk[s] * bs, nb = (double)sb[s] * bs, f = fc + nb;
    l += (int64_t)(f * fc);
    c->entries += fc * (fc + 1) / 2 + fc * nb;
    c->flops += fc * fc * fc / 3 + nb * fc * fc + nb * nb * fc;
    if ((int64_t)(f * f) > front_peak) front_peak = (int64_t)(f * f);
  }
  c->first[m] = (int32_t)n;
  c->rptr[m] = r;
  c->lptr[m] = l;
  for (long s = 0; s < m; s++) {
    int32_t par = parent[c->first[s + 1] - 1];
    if (par >= 0) c->nchild[sn_of[par]]++;
  }
  /* the update-matrix stack in postorder: a supernode pops its children's and pushes its own */
  {
    int64_t* sizes = malloc(sizeof(int64_t) * (m > 0 ? m : 1));
    long depth = 0;
    if (!sizes) {
      free(sn_of);
      st = CQI_CHOL_NOMEM;
      goto done;
    }
    for (long s = 0; s < m; s++) {
      for (int q = 0; q < c->nchild[s]; q++) stack -= sizes[--depth];
      int64_t nb = (c->rptr[s + 1] - c->rptr[s]) * bs;
      if (nb == 0) continue; /* a root */
      sizes[depth++] = nb * nb;
      stack += nb * nb;
      if (stack > stack_peak) stack_peak = stack;
    }
    free(sizes);
  }
  free(sn_of);
  c->front_len = (size_t)front_peak;
  c->stack_len = (size_t)stack_peak;
  c->L = malloc(sizeof(double) * (l > 0 ? l : 1));
  c->front = malloc(sizeof(double) * (front_peak > 0 ? front_peak : 1));
  c->stack = malloc(sizeof(double) * (stack_peak > 0 ? stack_peak : 1));
  if (!c->L || !c->front || !c->stack) st = CQI_CHOL_NOMEM;
done:
  free(nkids), free(sk), free(sb), free(snz), free(sf);
  return st;
}

static int analyse(cqi_chol* c, const cqi_block_matrix* A) {
  drop_analysis(c);
  long n = A->n;
  size_t pat = sizeof(int32_t) * (size_t)n * A->width;
  c->n = n, c->bs = A->bs, c->width = A->width;
  c->pattern = malloc(pat > 0 ? pat : 1);
  c->perm = malloc(sizeof(int32_t) * (n > 0 ? n : 1));
  c->iperm = malloc(sizeof(int32_t) * (n > 0 ? n : 1));
  c->map = malloc(sizeof(int32_t) * (n > 0 ? n : 1));
  c->xw = malloc(sizeof(double) * (n > 0 ? n : 1) * A->bs);
  int32_t* parent = malloc(sizeof(int32_t) * (n > 0 ? n : 1));
  int64_t* sptr = NULL;
  int32_t* sidx = NULL;
  int st = CQI_CHOL_NOMEM;
  if (c->pattern && c->perm && c->iperm && c->map && c->xw && parent) {
    memcpy(c->pattern, A->col, pat);
    st = order(c, A);
    if (st == CQI_CHOL_OK) st = etree_postorder(c, A, parent);
    if (st == CQI_CHOL_OK) st = column_structures(c, A, parent, &sptr, &sidx);
    if (st == CQI_CHOL_OK) st = supernodes(c, n, A->bs, parent, sptr, sidx);
  }
  free(parent), free(sptr), free(sidx);
  if (st != CQI_CHOL_OK) drop_analysis(c);
  else c->analysed = 1;
  return st;
}

/* The frontal matrix of supernode s: A's blocks of its columns (the lower triangle), then the children's update
 * matrices, popped from the top of the stack (*top: its used length). */
static void assemble(cqi_chol* c, const cqi_block_matrix* A, long s, double* F, long f, int64_t* top, int nkids,
                     const int64_t* kids) {
  int bs = c->bs;
  int32_t k0 = c->first[s], k1 = c->first[s + 1];
  memset(F, 0, sizeof(double) * f * f);
  for (int32_t j = k0; j < k1; j++) {
    const int32_t* row = A->col + (long)c->perm[j] * A->width;
    const double* val = A->val + (long)c->perm[j] * A->width * bs * bs;
    long cj = (long)c->map[j] * bs;
    for (int o = 0; o < A->width; o++) {
      if (row[o] < 0) continue;
      int32_t i = c->iperm[row[o]];
      if (i < j) continue; /* the upper triangle: that block's transpose is assembled from column i */
      long ri = (long)c->map[i] * bs;
      const double* blk = val + (long)o * bs * bs; /* A(j, i): its entry (a, b) is F(i b, j a) */
      for (int a = 0; a < bs; a++)
        for (int b = 0; b < bs; b++) F[(ri + b) + (cj + a) * f] += blk[a * bs + b];
    }
  }
  /* the children's update matrices (kids: their supernodes in the order pushed), popped from the top */
  for (int q = nkids - 1; q >= 0; q--) {
    long cs = kids[q];
    const int32_t* rows = c->rows + c->rptr[cs];
    long nr = (long)(c->rptr[cs + 1] - c->rptr[cs]), nu = nr * bs;
    *top -= nu * nu;
    const double* U = c->stack + *top;
    for (long q2 = 0; q2 < nr; q2++) {
      long cq = (long)c->map[rows[q2]] * bs;
      for (long p = q2; p < nr; p++) {
        long rp = (long)c->map[rows[p]] * bs;
        for (int a = 0; a < bs; a++)
          for (int b = p == q2 ? a : 0; b < bs; b++) F[(rp + b) + (cq + a) * f] += U[(p * bs + b) + (q2 * bs + a) * nu];
      }
    }
  }
}

int cqi_chol_factor(cqi_chol* c, const cqi_block_matrix* A) {
  size_t pat = sizeof(int32_t) * (size_t)A->n * A->width;
  int same = c->analysed && c->n == A->n && c->bs == A->bs && c->width == A->width &&
             memcmp(c->pattern, A->col, pat) == 0;
  c->factored = 0;
  if (!same) {
    int st = analyse(c, A);
    if (st != CQI_CHOL_OK) return st;
  }
  int bs = c->bs;
  int64_t top = 0;
  int64_t* kids = malloc(sizeof(int64_t) * (c->ns > 0 ? c->ns : 1)); /* the stack's supernodes, bottom up */
  if (!kids) return CQI_CHOL_NOMEM;
  long depth = 0;
  int st = CQI_CHOL_OK;
  for (long s = 0; s < c->ns; s++) {
    int32_t k0 = c->first[s], k1 = c->first[s + 1];
    long nc = k1 - k0, nr = (long)(c->rptr[s + 1] - c->rptr[s]);
    long f = (nc + nr) * bs;
    int fc = (int)(nc * bs), nb = (int)(nr * bs), fi = (int)f, info = 0;
    for (long q = 0; q < nc; q++) c->map[k0 + q] = (int32_t)q;
    for (long q = 0; q < nr; q++) c->map[c->rows[c->rptr[s] + q]] = (int32_t)(nc + q);
    depth -= c->nchild[s];
    assemble(c, A, s, c->front, f, &top, c->nchild[s], kids + depth);
    double* F = c->front;
    dpotrf_("L", &fc, F, &fi, &info);
    if (info != 0) {
      st = CQI_CHOL_NOT_PD;
      break;
    }
    if (nb > 0) {
      const double one = 1, minus = -1;
      dtrsm_("R", "L", "T", "N", &nb, &fc, &one, F, &fi, F + fc, &fi);
      dsyrk_("L", "N", &nb, &fc, &minus, F + fc, &fi, &one, F + fc + (long)fc * f, &fi);
      double* U = c->stack + top; /* push the update matrix (its lower triangle), leading dimension nb */
      for (long q = 0; q < nb; q++)
        memcpy(U + q * nb + q, F + fc + (long)(fc + q) * f + q, sizeof(double) * (nb - q));
      top += (int64_t)nb * nb;
      kids[depth++] = s;
    }
    memcpy(c->L + c->lptr[s], F, sizeof(double) * f * fc);
  }
  free(kids);
  if (st == CQI_CHOL_OK) c->factored = 1;
  return st;
}

void cqi_chol_solve(cqi_chol* c, double* x) {
  if (!c->factored) return;
  int bs = c->bs, inc = 1;
  double* y = c->xw;
  for (long k = 0; k < c->n; k++)
    for (int a = 0; a < bs; a++) y[k * bs + a] = x[(long)c->perm[k] * bs + a];
  /* forward: L y = x; the rows below a supernode take its share through the front stack's scratch */
  double* t = c->front;
  for (long s = 0; s < c->ns; s++) {
    long nc = c->first[s + 1] - c->first[s], nr = (long)(c->rptr[s + 1] - c->rptr[s]);
    int fc = (int)(nc * bs), nb = (int)(nr * bs), f = fc + nb;
    const double* Ls = c->L + c->lptr[s];
    double* ys = y + (long)c->first[s] * bs;
    dtrsv_("L", "N", "N", &fc, Ls, &f, ys, &inc);
    if (nb == 0) continue;
    const double one = 1, zero = 0;
    dgemv_("N", &nb, &fc, &one, Ls + fc, &f, ys, &inc, &zero, t, &inc);
    const int32_t* rows = c->rows + c->rptr[s];
    for (long q = 0; q < nr; q++)
      for (int a = 0; a < bs; a++) y[(long)rows[q] * bs + a] -= t[q * bs + a];
  }
  /* backward: L^T x = y */
  for (long s = c->ns - 1; s >= 0; s--) {
    long nc = c->first[s + 1] - c->first[s], nr = (long)(c->rptr[s + 1] - c->rptr[s]);
    int fc = (int)(nc * bs), nb = (int)(nr * bs), f = fc + nb;
    const double* Ls = c->L + c->lptr[s];
    double* ys = y + (long)c->first[s] * bs;
    if (nb > 0) {
      const int32_t* rows = c->rows + c->rptr[s];
      for (long q = 0; q < nr; q++)
        for (int a = 0; a < bs; a++) t[q * bs + a] = y[(long)rows[q] * bs + a];
      const double one = 1, minus = -1;
      dgemv_("T", &nb, &fc, &minus, Ls + fc, &f, t, &inc, &one, ys, &inc);
    }
    dtrsv_("L", "T", "N", &fc, Ls, &f, ys, &inc);
  }
  for (long k = 0; k < c->n; k++)
    for (int a = 0; a < bs; a++) x[(long)c->perm[k] * bs + a] = y[k * bs + a];
}
