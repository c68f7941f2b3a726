/* Supernodal multifrontal sparse Cholesky (sparse_cholesky.h). Three parts:
 *   analysis   METIS's nested dissection of the node graph, the elimination tree (Liu's algorithm) and its postorder,
 *              each column's node structure, fundamental supernodes relaxed into larger ones (CHOLMOD's default
 *              rule), the supernodal tree and its subtrees' costs, the panels' sizes; all at node level (bs x bs
 *              blocks)
 *   factor     per supernode, children before parents: the frontal matrix from A's blocks and the children's update
 *              matrices (extend-add, in child order), then dpotrf, dtrsm and dsyrk (quasi-definite fronts: the same in
 *              panels with the signs, signed_front); the panel is kept, the update
 *              matrix handed to the parent. Subtrees run as OpenMP tasks, each front on one thread with its own
 *              workspace, so the factors are the same bit for bit for any thread count (where the BLAS is safe to
 *              call concurrently: see check_blas)
 *   solve      forward and backward substitution by supernodes (dtrsv, dgemv), with S between them for L S L^T
 * Fronts and panels are column-major with leading dimension f, the front's order in unknowns. */
#include "sparse_cholesky.h"
#include <metis.h>
#include <omp.h>
#include <pthread.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* LAPACK and BLAS (Fortran symbols; the system's BLAS, OpenBLAS's pthread build in the Makefile's packages). */
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
  int neg;          /* of the last factorisation: the negative unknowns at each block's end (L S L^T) */
  int32_t* pattern; /* [n][width], a copy of A.col */
  int analysed;
  /* ordering: node perm[k] of A is column k of L; iperm is its inverse */
  int32_t *perm, *iperm;
  /* supernodes: columns first[s] .. first[s + 1] - 1 (contiguous), the node rows below them rows[rptr[s] ..
   * rptr[s + 1]) (sorted), their panel's offset in L; the supernodal tree as first child kid[s] and next sibling
   * sib[s] (-1: none), in increasing order, and each subtree's floating-point operations */
  long ns;
  int32_t *first, *rows, *kid, *sib;
  int64_t *rptr, *lptr;
  double* cost;
  double* L;
  /* workspace: per thread a front and a node map (node -> local position in the front); per supernode its update
   * matrix, from its factorisation to its parent's */
  double** fronts;
  int32_t** maps;
  int nthreads;
  double** upd;
  double* xw;
  size_t front_len;
  int factored;
};

cqi_chol* cqi_chol_create(void) { return calloc(1, sizeof(cqi_chol)); }

static void drop_workspace(cqi_chol* c) {
  for (int t = 0; t < c->nthreads; t++) free(c->fronts[t]), free(c->maps[t]);
  free(c->fronts), free(c->maps);
  c->fronts = NULL, c->maps = NULL, c->nthreads = 0;
}

static void drop_analysis(cqi_chol* c) {
  drop_workspace(c);
  free(c->pattern), free(c->perm), free(c->iperm), free(c->first), free(c->rows), free(c->kid), free(c->sib);
  free(c->rptr), free(c->lptr), free(c->cost), free(c->L), free(c->upd), free(c->xw);
  c->pattern = c->perm = c->iperm = c->first = c->rows = c->kid = c->sib = NULL;
  c->rptr = c->lptr = NULL;
  c->cost = c->L = c->xw = NULL;
  c->upd = NULL;
  c->analysed = c->factored = 0;
}

void cqi_chol_free(cqi_chol* c) {
  if (!c) return;
  drop_analysis(c);
  free(c);
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
#define CQI_FOR_NEIGHBOURS(c, A, k, j, ...)                           \
  do {                                                                \
    const int32_t* row_ = (A)->col + (long)(c)->perm[k] * (A)->width; \
    for (int o_ = 0; o_ < (A)->width; o_++) {                         \
      if (row_[o_] < 0) continue;                                     \
      int32_t j = (c)->iperm[row_[o_]];                               \
      if (j != (k)) {                                                 \
        __VA_ARGS__                                                   \
      }                                                               \
    }                                                                 \
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
 * < 10 %, any size with < 5 %). Fills first, rows, rptr, lptr, kid, sib, cost, the sizes and L. */
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
  c->kid = malloc(sizeof(int32_t) * (m > 0 ? m : 1));
  c->sib = malloc(sizeof(int32_t) * (m > 0 ? m : 1));
  c->cost = calloc(m > 0 ? m : 1, sizeof(double));
  c->upd = calloc(m > 0 ? m : 1, sizeof(double*));
  int64_t nrows = 0;
  for (long s = 0; s < m; s++) nrows += sb[s];
  c->rows = malloc(sizeof(int32_t) * (nrows > 0 ? nrows : 1));
  int32_t* sn_of = malloc(sizeof(int32_t) * (n > 0 ? n : 1));
  if (!c->first || !c->rptr || !c->lptr || !c->kid || !c->sib || !c->cost || !c->upd || !c->rows || !sn_of) {
    free(sn_of);
    st = CQI_CHOL_NOMEM;
    goto done;
  }
  /* rows below supernode s: its last column's structure less that column; sizes of panels and fronts */
  int64_t r = 0, l = 0, front_peak = 0;
  for (long s = 0; s < m; s++) {
    c->first[s] = sf[s];
    c->rptr[s] = r;
    c->lptr[s] = l;
    int32_t last = (int32_t)(sf[s] + sk[s] - 1);
    for (int64_t q = sptr[last] + 1; q < sptr[last + 1]; q++) c->rows[r++] = sidx[q];
    for (int32_t k = sf[s]; k <= last; k++) sn_of[k] = (int32_t)s;
    double fc = (double)sk[s] * bs, nb = (double)sb[s] * bs, f = fc + nb;
    l += (int64_t)(f * fc);
    c->cost[s] = fc * fc * fc / 3 + nb * fc * fc + nb * nb * fc;
    if ((int64_t)(f * f) > front_peak) front_peak = (int64_t)(f * f);
  }
  c->first[m] = (int32_t)n;
  c->rptr[m] = r;
  c->lptr[m] = l;
  /* the tree (children in increasing order) and the subtrees' costs (children come before their parents) */
  for (long s = 0; s < m; s++) c->kid[s] = c->sib[s] = -1;
  for (long s = m - 1; s >= 0; s--) {
    int32_t par = parent[c->first[s + 1] - 1];
    if (par < 0) continue;
    int32_t ps = sn_of[par];
    c->sib[s] = c->kid[ps];
    c->kid[ps] = (int32_t)s;
  }
  for (long s = 0; s < m; s++) {
    int32_t par = parent[c->first[s + 1] - 1];
    if (par >= 0) c->cost[sn_of[par]] += c->cost[s];
  }
  free(sn_of);
  c->front_len = (size_t)front_peak;
  c->L = malloc(sizeof(double) * (l > 0 ? l : 1));
  if (!c->L) st = CQI_CHOL_NOMEM;
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
  c->xw = malloc(sizeof(double) * (n > 0 ? n : 1) * A->bs);
  int32_t* parent = malloc(sizeof(int32_t) * (n > 0 ? n : 1));
  int64_t* sptr = NULL;
  int32_t* sidx = NULL;
  int st = CQI_CHOL_NOMEM;
  if (c->pattern && c->perm && c->iperm && c->xw && parent) {
    if (pat > 0) memcpy(c->pattern, A->col, pat); /* an empty matrix may have no column array (memcpy from NULL: UB) */
    st = order(c, A);
    if (st == CQI_CHOL_OK) st = etree_postorder(c, A, parent);
    if (st == CQI_CHOL_OK) st = column_structures(c, A, parent, &sptr, &sidx);
    if (st == CQI_CHOL_OK) st = supernodes(c, n, A->bs, parent, sptr, sidx);
  }
  free(parent), free(sptr), free(sidx);
  if (st != CQI_CHOL_OK)
    drop_analysis(c);
  else
    c->analysed = 1;
  return st;
}

/* The frontal matrix of supernode s (order f, node map map): A's blocks of its columns (the lower triangle), then
 * the children's update matrices in child order, each freed once added. */
static void assemble(cqi_chol* c, const cqi_block_matrix* A, long s, double* F, long f, const int32_t* map) {
  int bs = c->bs;
  int32_t k0 = c->first[s], k1 = c->first[s + 1];
  memset(F, 0, sizeof(double) * f * f);
  for (int32_t j = k0; j < k1; j++) {
    const int32_t* row = A->col + (long)c->perm[j] * A->width;
    const double* val = A->val + (long)c->perm[j] * A->width * bs * bs;
    long cj = (long)map[j] * bs;
    for (int o = 0; o < A->width; o++) {
      if (row[o] < 0) continue;
      int32_t i = c->iperm[row[o]];
      if (i < j) continue; /* the upper triangle: that block's transpose is assembled from column i */
      long ri = (long)map[i] * bs;
      const double* blk = val + (long)o * bs * bs; /* A(j, i): its entry (a, b) is F(i b, j a) */
      for (int a = 0; a < bs; a++)
        for (int b = 0; b < bs; b++) F[(ri + b) + (cj + a) * f] += blk[a * bs + b];
    }
  }
  for (int32_t k = c->kid[s]; k >= 0; k = c->sib[k]) {
    const int32_t* rows = c->rows + c->rptr[k];
    long nr = (long)(c->rptr[k + 1] - c->rptr[k]), nu = nr * bs;
    const double* U = c->upd[k];
    for (long q2 = 0; q2 < nr; q2++) {
      long cq = (long)map[rows[q2]] * bs;
      for (long p = q2; p < nr; p++) {
        long rp = (long)map[rows[p]] * bs;
        for (int a = 0; a < bs; a++)
          for (int b = p == q2 ? a : 0; b < bs; b++) F[(rp + b) + (cq + a) * f] += U[(p * bs + b) + (q2 * bs + a) * nu];
      }
    }
    free(c->upd[k]);
    c->upd[k] = NULL;
  }
}

/* The quasi-definite front (neg > 0): its first fc unknowns eliminated as F = L S L^T (s = -1 for the last neg
 * unknowns of each block, whatever the order: sparse_cholesky.h), in panels of SIGNED_PANEL columns, each as
 *   its diagonal block  left-looking, unblocked: l_jj = sqrt(s_j d_j), l_ij = f_ij / (s_j l_jj)
 *   the rows below      X = F21 L11^-T (dtrsm), L21 = X S1
 *   the rest            F22 -= X S1 X^T, as -X+ X+^T + X- X-^T by two dsyrk on the panel's columns of each sign.
 * The same operations as dpotrf/dtrsm/dsyrk's on a definite front. Returns CQI_CHOL_NOT_PD when a pivot's sign is
 * not its unknown's. */
enum { SIGNED_PANEL = 64 };
static int signed_front(double* F, long f, int fc, int bs, int neg) {
  int fi = (int)f, first = fc < SIGNED_PANEL ? fc : SIGNED_PANEL;
  double* W = malloc(sizeof(double) * ((size_t)(f - first) * first + 1)); /* the columns of X by sign */
  if (!W) return CQI_CHOL_NOMEM;
#define SIGN(k) ((k) % bs >= bs - neg ? -1.0 : 1.0)
  for (int k0 = 0; k0 < fc; k0 += SIGNED_PANEL) {
    int k1 = k0 + SIGNED_PANEL < fc ? k0 + SIGNED_PANEL : fc, w = k1 - k0, m = (int)(f - k1);
    for (int j = k0; j < k1; j++) {
      double* Fj = F + (long)j * f;
      for (int p = k0; p < j; p++) {
        const double* Fp = F + (long)p * f;
        double cp = Fp[j] * SIGN(p);
        for (int i = j; i < k1; i++) Fj[i] -= Fp[i] * cp;
      }
      double sj = SIGN(j), d = Fj[j] * sj;
      if (!(d > 0)) {
        free(W);
        return CQI_CHOL_NOT_PD;
      }
      double l = sqrt(d);
      Fj[j] = l;
      for (int i = j + 1; i < k1; i++) Fj[i] /= sj * l;
    }
    if (m == 0) continue;
    const double one = 1, minus = -1;
    double* X = F + k1 + (long)k0 * f;
    dtrsm_("R", "L", "T", "N", &m, &w, &one, F + k0 + (long)k0 * f, &fi, X, &fi);
    int np = 0, nn = 0;
    for (int j = k0; j < k1; j++) /* the positive columns first, then the negative ones */
      if (SIGN(j) > 0) memcpy(W + (long)m * np++, X + (long)(j - k0) * f, sizeof(double) * m);
    for (int j = k0; j < k1; j++)
      if (SIGN(j) < 0) {
        double* Xj = X + (long)(j - k0) * f;
        memcpy(W + (long)m * (np + nn++), Xj, sizeof(double) * m);
        for (int i = 0; i < m; i++) Xj[i] = -Xj[i]; /* L21 = X S1 */
      }
    double* F22 = F + k1 + (long)k1 * f;
    if (np > 0) dsyrk_("L", "N", &m, &np, &minus, W, &m, &one, F22, &fi);
    if (nn > 0) dsyrk_("L", "N", &m, &nn, &one, W + (long)m * np, &m, &one, F22, &fi);
  }
#undef SIGN
  free(W);
  return CQI_CHOL_OK;
}

/* Supernode s's front on this thread's workspace: assembly, dpotrf, dtrsm, dsyrk (or signed_front); its panel into L
 * and its update matrix (lower triangle, leading dimension nb) into upd[s]. Returns a CQI_CHOL status. */
static int factor_front(cqi_chol* c, const cqi_block_matrix* A, long s) {
  int bs = c->bs, t = omp_get_thread_num();
  double* F = c->fronts[t];
  int32_t* map = c->maps[t];
  int32_t k0 = c->first[s], k1 = c->first[s + 1];
  long nc = k1 - k0, nr = (long)(c->rptr[s + 1] - c->rptr[s]);
  long f = (nc + nr) * bs;
  int fc = (int)(nc * bs), nb = (int)(nr * bs), fi = (int)f, info = 0;
  for (long q = 0; q < nc; q++) map[k0 + q] = (int32_t)q;
  for (long q = 0; q < nr; q++) map[c->rows[c->rptr[s] + q]] = (int32_t)(nc + q);
  assemble(c, A, s, F, f, map);
  if (c->neg > 0) {
    int st = signed_front(F, f, fc, bs, c->neg);
    if (st != CQI_CHOL_OK) return st;
  } else {
    dpotrf_("L", &fc, F, &fi, &info);
    if (info != 0) return CQI_CHOL_NOT_PD;
  }
  if (nb > 0 && c->neg == 0) {
    const double one = 1, minus = -1;
    dtrsm_("R", "L", "T", "N", &nb, &fc, &one, F, &fi, F + fc, &fi);
    dsyrk_("L", "N", &nb, &fc, &minus, F + fc, &fi, &one, F + fc + (long)fc * f, &fi);
  }
  if (nb > 0) {
    double* U = c->upd[s] = malloc(sizeof(double) * nb * nb);
    if (!U) return CQI_CHOL_NOMEM;
    for (long q = 0; q < nb; q++) memcpy(U + q * nb + q, F + fc + (long)(fc + q) * f + q, sizeof(double) * (nb - q));
  }
  memcpy(c->L + c->lptr[s], F, sizeof(double) * f * fc);
  return CQI_CHOL_OK;
}

/* OpenBLAS, when it is the system's BLAS (weak: absent from other BLASes). Its serial build (0.3.21, Debian's
 * libopenblas0-serial) is not safe to call from two threads at once: its buffer pool has no lock, and concurrent
 * dpotrf/dsyrk calls on small fronts now and then return wrong factors (tests/c/cholesky_test.c caught it). Its
 * OpenMP build threads the calls made outside a parallel region, so the factors would depend on the thread count.
 * Its pthread build, set to one thread, is safe and deterministic; other BLASes (netlib, BLIS, MKL) are reentrant. */
int openblas_get_parallel(void) __attribute__((weak));
void openblas_set_num_threads(int) __attribute__((weak));
static int blas_concurrent_ok = 1;
static pthread_once_t blas_checked = PTHREAD_ONCE_INIT;
static void check_blas(void) {
  if (!openblas_get_parallel) return;
  int kind = openblas_get_parallel(); /* 0 serial, 1 pthreads, 2 OpenMP */
  if (kind == 1 && openblas_set_num_threads) openblas_set_num_threads(1);
  blas_concurrent_ok = kind == 1;
}

int cqi_chol_concurrent(void) {
  pthread_once(&blas_checked, check_blas);
  return blas_concurrent_ok;
}

/* Subtrees cheaper than this many operations run inside their parent's task (a task costs microseconds). */
#define CQI_CHOL_TASK_FLOPS 2e6

/* Supernode s's subtree: the children's (large ones as tasks), then s. The first failure is kept in *status. */
static void factor_subtree(cqi_chol* c, const cqi_block_matrix* A, long s, int* status) {
  for (int32_t k = c->kid[s]; k >= 0; k = c->sib[k]) {
    if (c->nthreads > 1 && c->cost[k] > CQI_CHOL_TASK_FLOPS) {
#pragma omp task firstprivate(k) shared(c, A, status)
      factor_subtree(c, A, k, status);
    } else {
      factor_subtree(c, A, k, status);
    }
  }
#pragma omp taskwait
  int failed;
#pragma omp atomic read
  failed = *status;
  if (failed != CQI_CHOL_OK) return;
  int st = factor_front(c, A, s);
  if (st != CQI_CHOL_OK) {
#pragma omp critical(cqi_chol_status)
    if (*status == CQI_CHOL_OK) *status = st;
  }
}

/* Per-thread fronts and node maps for threads threads. */
static int workspace(cqi_chol* c, int threads) {
  if (c->nthreads >= threads) return CQI_CHOL_OK;
  drop_workspace(c);
  c->fronts = calloc(threads, sizeof(double*));
  c->maps = calloc(threads, sizeof(int32_t*));
  if (!c->fronts || !c->maps) return CQI_CHOL_NOMEM;
  c->nthreads = threads;
  for (int t = 0; t < threads; t++) {
    c->fronts[t] = malloc(sizeof(double) * (c->front_len > 0 ? c->front_len : 1));
    c->maps[t] = malloc(sizeof(int32_t) * (c->n > 0 ? c->n : 1));
    if (!c->fronts[t] || !c->maps[t]) return CQI_CHOL_NOMEM;
  }
  return CQI_CHOL_OK;
}

int cqi_chol_factor(cqi_chol* c, const cqi_block_matrix* A, int threads) {
  size_t pat = sizeof(int32_t) * (size_t)A->n * A->width;
  int same =
      c->analysed && c->n == A->n && c->bs == A->bs && c->width == A->width && memcmp(c->pattern, A->col, pat) == 0;
  c->factored = 0;
  if (!same) {
    int st = analyse(c, A);
    if (st != CQI_CHOL_OK) return st;
  }
  c->neg = A->neg;
  if (threads < 1 || !cqi_chol_concurrent()) threads = 1; /* a BLAS not safe concurrently: one front at a time */
  int st = workspace(c, threads);
  if (st != CQI_CHOL_OK) {
    drop_workspace(c);
    return st;
  }
  int nth = c->nthreads; /* a larger workspace from an earlier call may stand */
  c->nthreads = threads;
#pragma omp parallel num_threads(threads) if (threads > 1)
#pragma omp single
  for (long s = 0; s < c->ns; s++)
    if (c->rptr[s + 1] == c->rptr[s]) factor_subtree(c, A, s, &st); /* the roots: no rows below */
  c->nthreads = nth;
  for (long s = 0; s < c->ns; s++) { /* after a failure, update matrices no parent took */
    free(c->upd[s]);
    c->upd[s] = NULL;
  }
  if (st == CQI_CHOL_OK) c->factored = 1;
  return st;
}

void cqi_chol_solve(cqi_chol* c, double* x) {
  if (!c->factored) return;
  int bs = c->bs, inc = 1;
  double* y = c->xw;
  for (long k = 0; k < c->n; k++)
    for (int a = 0; a < bs; a++) y[k * bs + a] = x[(long)c->perm[k] * bs + a];
  /* forward: L y = x; the rows below a supernode take its share through a front's scratch */
  double* t = c->fronts[0];
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
  if (c->neg > 0) /* S y: S^-1 = S */
    for (long k = 0; k < c->n * bs; k++)
      if (k % bs >= bs - c->neg) y[k] = -y[k];
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
