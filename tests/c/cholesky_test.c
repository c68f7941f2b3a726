/* cholesky_test.c: the supernodal sparse Cholesky of engine/integrators/sparse_cholesky.c and the semi-definite projection of
 * engine/stages/symeig.h (cqi_psd_project), on their own. Block matrices on grid graphs like the implicit solve's (nodes of
 * a box of cells, each coupled to those within two cells; a ball of missing nodes, two separate components), with
 * random symmetric values made definite by diagonal dominance: the solve's residual ||A x - b|| / ||b||, the same
 * factors on a second factorisation (bit for bit), reuse of the analysis with new values, a new pattern, a matrix
 * that is not definite, and the empty and one-node cases; quasi-definite matrices (L S L^T, the grid fluid's augmented
 * matrix in implicit_factor.c) likewise. The projection: a semi-definite result, A - P(A)
 * semi-definite too with P(A) (A - P(A)) = 0 (so P(A) is the nearest one), and a semi-definite A left as it is. Built
 * and run by tests/engine_spec.lua; prints one line per case and exits 1 if any fails. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cq_real.h"
#include "sparse_cholesky.h"
#include "symeig.h"

static int failed = 0;
static void check(int ok, const char* what, double value) {
  printf("%s %s (%.3g)\n", ok ? "ok  " : "FAIL", what, value);
  if (!ok) failed = 1;
}

static double prand(long i, int salt) { /* deterministic, in [-1, 1] */
  double v = sin(12.9898 * (double)i + 78.233 * salt) * 43758.5453;
  return 2 * (v - floor(v)) - 1;
}

/* A grid graph: the nodes of an nx x ny x nz box (nz = 1: 2D) less a ball of radius hole around its centre and,
 * when split, less the plane x = nx / 2 (two components); each node coupled to the nodes within two cells. */
typedef struct {
  long n;
  int width, bs;
  int32_t* col;
  double* val;
} bmat;

static bmat grid_matrix(int nx, int ny, int nz, int bs, double hole, int split, int salt) {
  int D = nz > 1 ? 3 : 2, width = D == 3 ? 125 : 25;
  long* id = malloc(sizeof(long) * nx * ny * nz);
  long n = 0;
  for (int i = 0; i < nx; i++)
    for (int j = 0; j < ny; j++)
      for (int k = 0; k < nz; k++) {
        double dx = i - nx / 2.0, dy = j - ny / 2.0, dz = nz > 1 ? k - nz / 2.0 : 0;
        int gone = dx * dx + dy * dy + dz * dz < hole * hole || (split && i == nx / 2);
        id[(i * ny + j) * nz + k] = gone ? -1 : n++;
      }
  bmat A = {n, width, bs, malloc(sizeof(int32_t) * (n ? n : 1) * width), calloc((n ? n : 1) * width * bs * bs, 8)};
  for (int i = 0; i < nx; i++)
    for (int j = 0; j < ny; j++)
      for (int k = 0; k < nz; k++) {
        long a = id[(i * ny + j) * nz + k];
        if (a < 0) continue;
        for (int o = 0; o < width; o++) {
          int di = o % 5 - 2, dj = o / 5 % 5 - 2, dk = D == 3 ? o / 25 - 2 : 0;
          int ii = i + di, jj = j + dj, kk = k + dk;
          long b = ii >= 0 && ii < nx && jj >= 0 && jj < ny && kk >= 0 && kk < nz ? id[(ii * ny + jj) * nz + kk] : -1;
          if (split && b >= 0 && ((i < nx / 2) != (ii < nx / 2))) b = -1;
          A.col[a * width + o] = (int32_t)b;
        }
      }
  /* symmetric values: the block (a, b) from the unordered pair's seed, transposed for (b, a); then each diagonal
   * block's diagonal above its row's absolute sum */
  for (long a = 0; a < n; a++)
    for (int o = 0; o < width; o++) {
      long b = A.col[a * width + o];
      if (b < 0 || b == a) continue;
      long lo = a < b ? a : b, hi = a < b ? b : a;
      double* blk = A.val + (a * width + o) * bs * bs;
      for (int r = 0; r < bs; r++)
        for (int c = 0; c < bs; c++) {
          int rr = a < b ? r : c, cc = a < b ? c : r;
          blk[r * bs + c] = prand(lo * 7919 + hi * 104729 + rr * bs + cc, salt);
        }
    }
  for (long a = 0; a < n; a++) {
    double* diag = NULL;
    double sum[4] = {0, 0, 0, 0};
    for (int o = 0; o < width; o++) {
      long b = A.col[a * width + o];
      if (b < 0) continue;
      double* blk = A.val + (a * width + o) * bs * bs;
      if (b == a) {
        diag = blk;
        continue;
      }
      for (int r = 0; r < bs; r++)
        for (int c = 0; c < bs; c++) sum[r] += fabs(blk[r * bs + c]);
    }
    for (int r = 0; r < bs; r++)
      for (int c = 0; c < bs; c++) {
        double v = r == c ? sum[r] + bs + 1 + prand(a * 31 + r, salt + 1) : 0.3 * prand(a * 37 + r + c, salt + 2);
        diag[r * bs + c] = diag[c * bs + r] = v;
      }
  }
  free(id);
  return A;
}

static cqi_block_matrix view(const bmat* A) { return (cqi_block_matrix){A->n, A->bs, A->width, A->col, A->val, 0}; }

/* ||A x - b|| / ||b|| after x = A^-1 b by the factors in c. */
static double residual(cqi_chol* c, const bmat* A) {
  long len = A->n * A->bs;
  double *b = malloc(sizeof(double) * (len ? len : 1)), *x = malloc(sizeof(double) * (len ? len : 1)), num = 0, den = 0;
  for (long i = 0; i < len; i++) x[i] = b[i] = prand(i, 99);
  cqi_chol_solve(c, x);
  for (long a = 0; a < A->n; a++)
    for (int r = 0; r < A->bs; r++) {
      double t = -b[a * A->bs + r];
      for (int o = 0; o < A->width; o++) {
        long bb = A->col[a * A->width + o];
        if (bb < 0) continue;
        for (int q = 0; q < A->bs; q++)
          t += A->val[(a * A->width + o) * A->bs * A->bs + r * A->bs + q] * x[bb * A->bs + q];
      }
      num += t * t, den += b[a * A->bs + r] * b[a * A->bs + r];
    }
  free(b), free(x);
  return den > 0 ? sqrt(num / den) : 0;
}

static void free_bmat(bmat* A) { free(A->col), free(A->val); }

static void cholesky_cases(void) {
  char what[160];
  struct {
    int nx, ny, nz, bs;
    double hole;
    int split;
  } cases[] = {
      {14, 9, 7, 3, 2.5, 0}, {12, 8, 6, 3, 0, 1}, {30, 22, 1, 2, 5, 0}, {1, 1, 1, 3, 0, 0}, {5, 1, 1, 2, 0, 0}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    bmat A = grid_matrix(cases[k].nx, cases[k].ny, cases[k].nz, cases[k].bs, cases[k].hole, cases[k].split, (int)k);
    cqi_block_matrix V = view(&A);
    cqi_chol* c = cqi_chol_create();
    int threads = 1;
    int st = cqi_chol_factor(c, &V, threads);
    double res = st == CQI_CHOL_OK ? residual(c, &A) : 1;
    snprintf(what, sizeof what, "%dx%dx%d nodes less %ld (bs %d%s): factorised, residual", cases[k].nx, cases[k].ny,
             cases[k].nz, (long)cases[k].nx * cases[k].ny * cases[k].nz - A.n, cases[k].bs,
             cases[k].split ? ", two components" : "");
    check(st == CQI_CHOL_OK && res < 1e-12, what, res);
    /* the same values on 2 threads (subtrees as tasks): the same solution bit for bit; new values on the same
     * pattern: the kept analysis */
    long len = A.n * A.bs;
    double *x1 = malloc(sizeof(double) * (len ? len : 1)), *x2 = malloc(sizeof(double) * (len ? len : 1));
    for (long i = 0; i < len; i++) x1[i] = x2[i] = prand(i, 5);
    cqi_chol_solve(c, x1);
    threads = 2;
    st = cqi_chol_factor(c, &V, threads);
    cqi_chol_solve(c, x2);
    check(st == CQI_CHOL_OK && memcmp(x1, x2, sizeof(double) * len) == 0,
          cqi_chol_concurrent() ? "  refactorised on 2 threads: the same solution, bit for bit"
                                : "  refactorised (this BLAS allows one thread only): the same solution, bit for bit",
          0);
    bmat B =
        grid_matrix(cases[k].nx, cases[k].ny, cases[k].nz, cases[k].bs, cases[k].hole, cases[k].split, (int)k + 50);
    cqi_block_matrix W = view(&B);
    st = cqi_chol_factor(c, &W, threads);
    res = st == CQI_CHOL_OK ? residual(c, &B) : 1;
    check(st == CQI_CHOL_OK && res < 1e-12, "  new values on the kept analysis: residual", res);
    free_bmat(&B);
    free(x1), free(x2);
    cqi_chol_free(c);
    free_bmat(&A);
  }
  /* a new pattern after an analysis; a matrix that is not definite; nothing at all */
  cqi_chol* c = cqi_chol_create();
  bmat A = grid_matrix(10, 8, 6, 3, 2, 0, 7), B = grid_matrix(9, 9, 7, 3, 3, 0, 8);
  cqi_block_matrix VA = view(&A), VB = view(&B);
  int st = cqi_chol_factor(c, &VA, 2);
  st = st == CQI_CHOL_OK ? cqi_chol_factor(c, &VB, 2) : st;
  double res = st == CQI_CHOL_OK ? residual(c, &B) : 1;
  check(st == CQI_CHOL_OK && res < 1e-12, "a new pattern after another: analysed again, residual", res);
  B.val[(B.width - 1) / 2 * B.bs * B.bs] = -1e3; /* the first node's diagonal block (its centre entry is itself) */
  st = cqi_chol_factor(c, &VB, 2);
  check(st == CQI_CHOL_NOT_PD, "a negative diagonal: not positive definite", st);
  bmat E = {0, 25, 2, NULL, NULL};
  cqi_block_matrix VE = view(&E);
  st = cqi_chol_factor(c, &VE, 2);
  check(st == CQI_CHOL_OK, "no nodes: nothing to factorise", st);
  cqi_chol_free(c);
  free_bmat(&A), free_bmat(&B);
}

/* Quasi-definite matrices (neg = 1), as implicit_factor.c makes of the grid fluid: a definite grid matrix of 4 x 4
 * blocks (3D; 3 x 3 in 2D) with every block's last diagonal entry negated (so the last unknowns' part is negative definite), its couplings
 * between the signs scaled by stiff (the water's sqrt(K)): L S L^T in METIS's order, the residual, the same solution
 * on 2 threads, and a matrix whose positive part is not definite refused. */
static void quasi_definite_cases(void) {
  char what[160];
  const double stiffs[] = {1, 1e3, 1e3};
  for (int k = 0; k < 3; k++) {
    int bs = k < 2 ? 4 : 3, last = bs - 1, BB = bs * bs;
    bmat A = k < 2 ? grid_matrix(12, 9, 7, 4, 2.5, 0, 20 + k) : grid_matrix(30, 22, 1, 3, 5, 0, 22);
    for (long b = 0; b < A.n * A.width; b++) {
      double* blk = A.val + b * BB;
      blk[BB - 1] = -blk[BB - 1];
      for (int r = 0; r < last; r++) blk[r * bs + last] *= stiffs[k], blk[last * bs + r] *= stiffs[k];
    }
    cqi_block_matrix V = view(&A);
    V.neg = 1;
    cqi_chol* c = cqi_chol_create();
    int st = cqi_chol_factor(c, &V, 1);
    double res = st == CQI_CHOL_OK ? residual(c, &A) : 1;
    snprintf(what, sizeof what, "quasi-definite %s (bs %d, neg 1, couplings x %g): L S L^T, residual",
             k < 2 ? "12x9x7" : "30x22", bs, stiffs[k]);
    check(st == CQI_CHOL_OK && res < (k ? 1e-9 : 1e-12), what, res);
    long len = A.n * A.bs;
    double *x1 = malloc(sizeof(double) * len), *x2 = malloc(sizeof(double) * len);
    for (long i = 0; i < len; i++) x1[i] = x2[i] = prand(i, 6);
    cqi_chol_solve(c, x1);
    st = cqi_chol_factor(c, &V, 2);
    cqi_chol_solve(c, x2);
    check(st == CQI_CHOL_OK && memcmp(x1, x2, sizeof(double) * len) == 0,
          "  on 2 threads: the same solution, bit for bit", 0);
    if (k == 1) { /* a positive unknown's diagonal made negative: its pivot has the wrong sign */
      A.val[(A.width - 1) / 2 * BB] = -1e9;
      st = cqi_chol_factor(c, &V, 1);
      check(st == CQI_CHOL_NOT_PD, "  a positive unknown's negative diagonal: refused", st);
    }
    free(x1), free(x2);
    cqi_chol_free(c);
    free_bmat(&A);
  }
}

/* x^T M x over many directions: the smallest, relative to |M|. */
static double min_quadratic(int n, cq_real M[9][9]) {
  double worst = INFINITY, norm = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) norm += M[i][j] * M[i][j];
  for (int t = 0; t < 2000; t++) {
    double x[9], q = 0, xx = 0;
    for (int i = 0; i < n; i++) x[i] = prand(t * 9 + i, 3), xx += x[i] * x[i];
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) q += x[i] * M[i][j] * x[j];
    if (q / xx < worst) worst = q / xx;
  }
  return worst / (norm > 0 ? sqrt(norm) : 1);
}

static void projection_cases(void) {
  for (int trial = 0; trial < 6; trial++) {
    int n = trial % 2 ? 9 : 4;
    cq_real A[9][9], P[9][9], R[9][9];
    for (int i = 0; i < n; i++)
      for (int j = 0; j <= i; j++) A[i][j] = A[j][i] = prand(i * 9 + j, 10 + trial) + (i == j ? 0.3 * trial - 0.6 : 0);
    memcpy(P, A, sizeof P);
    int clamped = cqi_psd_project(n, P);
    double comm = 0, scale = 0;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) R[i][j] = P[i][j] - A[i][j]; /* semi-definite: the clamped negative part */
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) {
        double t = 0;
        for (int k = 0; k < n; k++) t += P[i][k] * R[k][j];
        comm = fmax(comm, fabs(t));
        scale = fmax(scale, fabs(A[i][j]));
      }
    char what[120];
    snprintf(what, sizeof what, "projection %dx%d (trial %d, clamped %d): min x.P(A)x / |P(A)|", n, n, trial, clamped);
    check(min_quadratic(n, P) > -1e-12, what, min_quadratic(n, P));
    check(min_quadratic(n, R) > -1e-12, "  P(A) - A semi-definite: min x.(P(A) - A)x / |P(A) - A|",
          min_quadratic(n, R));
    check(comm < 1e-12 * scale * scale, "  P(A) (P(A) - A) = 0: largest entry", comm);
    /* a projected matrix stays as it is (semi-definite: returns 0, no entry changed) */
    memcpy(R, P, sizeof R);
    int again = cqi_psd_project(n, R);
    int same = 1;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) same &= fabs(R[i][j] - P[i][j]) <= 1e-13 * scale;
    check(!again || same, "  the projection of the projection is itself", again);
  }
  cq_real I[9][9] = {{0}};
  for (int i = 0; i < 9; i++) I[i][i] = 1 + i;
  cq_real J[9][9];
  memcpy(J, I, sizeof J);
  check(cqi_psd_project(9, J) == 0 && memcmp(I, J, sizeof I) == 0, "a definite matrix is left bit for bit", 0);
}

int main(void) {
  cholesky_cases();
  quasi_definite_cases();
  projection_cases();
  printf("rc=%d\n", failed);
  return failed;
}
