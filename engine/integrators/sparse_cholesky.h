/* A supernodal multifrontal sparse Cholesky factorisation A = L L^T of a symmetric positive definite matrix made of bs
 * x bs blocks on a graph of nodes (the implicit solve's Hessian, implicit_factor.c: one node per grid node with mass,
 * bs = D), or A = L S L^T of a quasi-definite one (neg below: with the grid fluid, bs = D + 1). METIS orders the nodes
 * (nested dissection); the dense work runs in LAPACK/BLAS (dpotrf, dtrsm, dsyrk), so it goes at the speed of the
 * system's BLAS. Written here because no permissively licensed supernodal Cholesky is packaged for Debian (CHOLMOD's
 * supernodal module is GPL; MUMPS and PaStiX are CeCILL-C/LGPL), and SuperLU's LU, which it replaces, took 12x longer
 * on the finger's Hessian (docs/results/history.md, "Issue 11"). Serial and in a fixed order: the same matrix gives the
 * same factors, bit for bit. */
#ifndef CQ_SPARSE_CHOLESKY_H
#define CQ_SPARSE_CHOLESKY_H
#include <stdint.h>

/* A symmetric block matrix by block rows: row i holds up to width blocks, block (i, col[i][o]) = val[i][o] (bs x bs,
 * row-major), col = -1 where there is none. Every row lists its diagonal block, and block (j, i) is the transpose of
 * (i, j) (both listed).
 * neg = 0: A is positive definite, factorised A = L L^T. neg > 0: A is quasi-definite with the last neg unknowns of
 * every block the negative definite part ([[P, B^T], [B, -N]], P and N positive definite, after a symmetric
 * permutation): it has A = L S L^T in any elimination order, S = diag(+-1) by those unknowns (Vanderbei 1995,
 * "Symmetric quasidefinite matrices"), so the same ordering and no pivoting serve (implicit_factor.c's grid fluid). */
typedef struct {
  long n;             /* block rows (nodes) */
  int bs;             /* block size */
  int width;          /* entries per block row */
  const int32_t* col; /* [n][width] */
  const double* val;  /* [n][width][bs][bs] */
  int neg;            /* the negative unknowns at each block's end (0: positive definite) */
} cqi_block_matrix;

typedef struct cqi_chol cqi_chol;

enum { CQI_CHOL_OK = 0, CQI_CHOL_NOT_PD = 1, CQI_CHOL_NOMEM = -1, CQI_CHOL_ORDER = -2 };

cqi_chol* cqi_chol_create(void);
void cqi_chol_free(cqi_chol* c);
/* Factorises A on threads threads (subtrees of the elimination tree in parallel; the same factors for any count).
 * The ordering and the symbolic analysis are kept and reused while A's pattern (n, width, col) stays the same.
 * Returns CQI_CHOL_OK; CQI_CHOL_NOT_PD when a pivot is not positive (with neg: a pivot's sign is not its unknown's;
 * the factors are then invalid); CQI_CHOL_NOMEM;
 * CQI_CHOL_ORDER when METIS fails. */
int cqi_chol_factor(cqi_chol* c, const cqi_block_matrix* A, int threads);
/* Whether cqi_chol_factor runs fronts on several threads at once: only where the BLAS is safe to call that way
 * (sparse_cholesky.c, check_blas); otherwise it factorises on one thread whatever threads says. */
int cqi_chol_concurrent(void);
/* x = A^-1 x in place (x: [n][bs], in A's node order), with the factors of the last successful cqi_chol_factor
 * (L^-T S L^-1 x with neg). */
void cqi_chol_solve(cqi_chol* c, double* x);

#endif
