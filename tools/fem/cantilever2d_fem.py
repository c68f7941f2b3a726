#!/usr/bin/env python3
"""Independent finite-element reference for cqlua's 2D plane-strain cantilever under gravity (tip sag).

A check only: scikit-fem (PyPI) and numpy/scipy, nothing of cqlua's code. Standalone (no gmsh: structured meshes).

The model (SI units):
  * the beam x in [x_clamp, 0.52], y in [0.5, 0.5 + H], H = 1/16 m; clamped (u = 0) on the line x = x_clamp (the
    material left of it is a rigid clamp and is not modelled); x_clamp = 2/64 and 3/64 (the MPM clamp's edge lies
    between these);
  * plane strain (eps_zz = 0), shear modulus mu = 6000 Pa, 3D bulk modulus K = ratio * mu (ratio 3, 10, 30, 1e4) and
    K = infinity (nu = 0.5); density 1 kg/m^3, gravity 10 m/s^2 along -y (dead body force rho g per unit area);
  * LINEAR elasticity in mixed displacement-pressure form (Taylor-Hood P2/P1 triangles), locking-free for any K:
        int 2 mu dev(eps(u)) : eps(v) - p div v dA = int f . v dA
        int q (div u + p / K) dA = 0                    (1/K = 0 for nu = 0.5)
    with dev the 3D deviator of the plane-strain strain (eps_zz = 0), p = -K tr(eps) the pressure; this is
    sigma = 2 mu eps + lambda tr(eps) I, lambda = K - 2 mu / 3, with p eliminated;
  * structured meshes of right triangles ("union-jack" crossed pattern, so no diagonal bias), element size h (the
    square cell's side) = H/4, H/8, H/16 (option --levels);
  * the tip sag: -(1/H) int u_y dy over the end face x = 0.52 (the mean over y of u_y there), in mm;
  * one nonlinear check (--nonlinear, default on): a compressible-split neo-Hookean,
        W = mu/2 (I1bar - 3) + K/2 (J - 1)^2,  I1bar of F3 = diag(F, 1),
    mixed (p (J - 1) - p^2 / (2K)), Newton, at the middle mesh, nu = 0.5 and K = 30 mu, both clamps;
  * Timoshenko's beam estimate for comparison: q L^4 / (8 E' I) + q L^2 / (2 k mu H), q = rho g H (per unit
    width), E' = 4 mu (incompressible plane strain), I = H^3 / 12, k = 5/6, L = 0.52 - x_clamp; and (extra column)
    the same with E' = E / (1 - nu^2) of each ratio.

usage: python3 tools/fem/cantilever2d_fem.py [--levels 4,8,16] [--ratios 3,10,30,1e4,inf] [--no-nonlinear]
Takes well under a minute on a CPU.
"""
import argparse
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from skfem import (MeshTri, Basis, FacetBasis, ElementTriP1, ElementTriP2, ElementVector, BilinearForm, LinearForm,
                   Functional)
from skfem.helpers import ddot, div, sym_grad, grad

MU, RHO, G = 6000.0, 1.0, 10.0
H = 1.0 / 16.0
Y0 = 0.5
XTIP = 0.52
CLAMPS = (2.0 / 64.0, 3.0 / 64.0)


# ---------------------------------------------------------------------------------------------------------- mesh
def make_mesh(xc, h):
    """[xc, XTIP] x [Y0, Y0 + H] cut in squares of side ~h (exactly H/ny across, L/nx along), each square cut in 4
    triangles by its two diagonals (a centre node), so the mesh has no preferred diagonal."""
    ny = int(round(H / h))
    nx = int(np.ceil((XTIP - xc) / h - 1e-9))
    xs, ys = np.linspace(xc, XTIP, nx + 1), np.linspace(Y0, Y0 + H, ny + 1)
    X, Y = np.meshgrid(xs, ys, indexing="ij")
    corners = np.vstack([X.ravel(), Y.ravel()])
    idx = lambda i, j: i * (ny + 1) + j
    I, J = np.meshgrid(np.arange(nx), np.arange(ny), indexing="ij")
    I, J = I.ravel(), J.ravel()
    centres = np.vstack([0.5 * (xs[I] + xs[I + 1]), 0.5 * (ys[J] + ys[J + 1])])
    c = corners.shape[1] + np.arange(len(I))
    a, b, d, e = idx(I, J), idx(I + 1, J), idx(I + 1, J + 1), idx(I, J + 1)
    t = np.hstack([np.vstack([a, b, c]), np.vstack([b, d, c]), np.vstack([d, e, c]), np.vstack([e, a, c])])
    return MeshTri(np.hstack([corners, centres]), t)


# ------------------------------------------------------------------------------------------------------- forms
def dev3_ddot(e, f):
    """dev(e3) : f3 for plane-strain tensors e, f (e_zz = f_zz = 0): e : f - tr(e) tr(f) / 3."""
    return ddot(e, f) - (e[0, 0] + e[1, 1]) * (f[0, 0] + f[1, 1]) / 3.0


@BilinearForm
def a_uu(u, v, w):
    return 2.0 * MU * dev3_ddot(sym_grad(u), sym_grad(v))


@BilinearForm
def b_up(u, q, w):  # rows: pressure test q; columns: displacement trial u
    return q * div(u)


@BilinearForm
def m_pp(p, q, w):
    return p * q


@LinearForm
def f_u(v, w):
    return -RHO * G * v[1]


@Functional
def face_uy(w):
    return w["u"].value[1]


# ------------------------------------------------------------------------------------------------- the problem
class Cantilever:
    def __init__(self, xc, h):
        self.xc, self.h = xc, h
        self.mesh = make_mesh(xc, h)
        self.ub = Basis(self.mesh, ElementVector(ElementTriP2()), intorder=4)
        self.pb = Basis(self.mesh, ElementTriP1(), intorder=4)
        self.Nu, self.Np = self.ub.N, self.pb.N
        self.A = a_uu.assemble(self.ub)
        self.B = b_up.assemble(self.ub, self.pb)  # (Np, Nu)
        self.M = m_pp.assemble(self.pb)
        self.f = f_u.assemble(self.ub)
        fixed = self.ub.get_dofs(lambda x: np.abs(x[0] - xc) < 1e-12).all()
        self.free = np.setdiff1d(np.arange(self.Nu + self.Np), fixed)
        tipf = self.mesh.facets_satisfying(lambda x: np.abs(x[0] - XTIP) < 1e-12)
        self.fb = FacetBasis(self.mesh, ElementVector(ElementTriP2()), facets=tipf, intorder=4)
        assert abs(Functional(lambda w: 1.0 + 0 * w.x[0]).assemble(self.fb) - H) < 1e-12

    def tip_sag(self, u):
        """-(mean of u_y over the end face x = XTIP), m."""
        return -face_uy.assemble(self.fb, u=self.fb.interpolate(u)) / H

    def solve_linear(self, ratio):
        invK = 0.0 if np.isinf(ratio) else 1.0 / (ratio * MU)
        Kt = sp.bmat([[self.A, -self.B.T], [-self.B, -invK * self.M]], format="csc")
        rhs = np.concatenate([self.f, np.zeros(self.Np)])
        x = np.zeros(self.Nu + self.Np)
        f = self.free
        x[f] = spla.spsolve(Kt[f][:, f].tocsc(), rhs[f])
        return x[:self.Nu], x[self.Nu:]

    # ---- nonlinear check: W = mu/2 (I1bar - 3) + mixed K/2 (J - 1)^2, plane strain, dead gravity load
    def solve_nonlinear(self, ratio, u0=None, tol=1e-12, maxit=30):
        invK = 0.0 if np.isinf(ratio) else 1.0 / (ratio * MU)
        x = np.zeros(self.Nu + self.Np)
        if u0 is not None:
            x[:self.Nu] = u0
        f = self.free
        for it in range(1, maxit + 1):
            R, Kt = self._nl_system(x, invK)
            dx = np.zeros_like(x)
            dx[f] = spla.spsolve(Kt[f][:, f].tocsc(), -R[f])
            x += dx
            if np.abs(dx[:self.Nu]).max() < tol:
                return x[:self.Nu], it
        raise RuntimeError("Newton did not converge")

    def _nl_system(self, x, invK):
        uf = self.ub.interpolate(x[:self.Nu])
        pf = self.pb.interpolate(x[self.Nu:])
        F = np.eye(2)[:, :, None, None] + uf.grad
        Pi = P_iso(F)
        A = A_iso(F)
        cF = cof(F)
        J = F[0, 0] * F[1, 1] - F[0, 1] * F[1, 0]
        Ru = nl_r_u.assemble(self.ub, P=Pi, p=pf, cofF=cF)
        Rp = nl_r_p.assemble(self.pb, p=pf, J=J, invK=invK)
        Kuu = nl_a_uu.assemble(self.ub, A=A, p=pf)
        B = nl_b_up.assemble(self.ub, self.pb, cofF=cF)
        Kt = sp.bmat([[Kuu, B.T], [B, -invK * self.M]], format="csr")
        return np.concatenate([Ru - self.f, Rp]), Kt


def cof(F):
    return np.array([[F[1, 1], -F[1, 0]], [-F[0, 1], F[0, 0]]])


def P_iso(F):
    """First Piola stress of mu/2 (I1bar - 3), I1bar = J^(-2/3) (tr(F^T F) + 1) (plane strain)."""
    J = F[0, 0] * F[1, 1] - F[0, 1] * F[1, 0]
    I1 = np.einsum("ij...,ij...->...", F, F) + 1.0
    return 0.5 * MU * (J ** (-2.0 / 3.0) * 2.0 * F - (2.0 / 3.0) * J ** (-5.0 / 3.0) * I1 * cof(F))


def A_iso(F):
    """dP/dF by complex step (exact to round-off)."""
    hc = 1e-30
    A = np.zeros((2, 2, 2, 2) + F.shape[2:])
    for k in range(2):
        for l in range(2):
            Fc = F.astype(complex)
            Fc[k, l] = Fc[k, l] + 1j * hc
            A[:, :, k, l] = P_iso(Fc).imag / hc
    return A


@LinearForm
def nl_r_u(v, w):
    return ddot(w["P"].value + w["p"] * w["cofF"].value, grad(v))


def invK_of(w):
    k = w["invK"]
    return getattr(k, "value", k)


@LinearForm
def nl_r_p(q, w):
    return q * (w["J"].value - 1.0 - invK_of(w) * w["p"])


@BilinearForm
def nl_a_uu(du, v, w):
    return np.einsum("ijkl...,kl...,ij...->...", w["A"].value, grad(du), grad(v)) + w["p"] * ddot(cof(grad(du)), grad(v))


@BilinearForm
def nl_b_up(du, q, w):
    return q * ddot(w["cofF"].value, grad(du))


# --------------------------------------------------------------------------------------------------- estimates
def nu_of(ratio):
    return 0.5 if np.isinf(ratio) else (3 * ratio - 2) / (2 * (3 * ratio + 1))


def timoshenko(xc, Eprime=4 * MU):
    L = XTIP - xc
    q = RHO * G * H
    I = H ** 3 / 12
    return q * L ** 4 / (8 * Eprime * I) + q * L ** 2 / (2 * (5.0 / 6.0) * MU * H)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="4,8,16", help="element sizes as H/n: the n's")
    ap.add_argument("--ratios", default="3,10,30,1e4,inf", help="K/mu values; inf = incompressible (nu = 0.5)")
    ap.add_argument("--no-nonlinear", action="store_true")
    args = ap.parse_args()
    levels = [int(s) for s in args.levels.split(",")]
    ratios = [float(s) for s in args.ratios.split(",")]
    t0 = time.time()

    res = {}
    for xc in CLAMPS:
        for n in levels:
            pr = Cantilever(xc, H / n)
            for r in ratios:
                u, _ = pr.solve_linear(r)
                res[xc, n, r] = pr.tip_sag(u)
            print("  clamp %d/64, h = H/%d: %d triangles, %d + %d unknowns" % (round(xc * 64), n, pr.mesh.t.shape[1],
                                                                            pr.Nu, pr.Np))

    print("\nLinear plane-strain tip sag (mean u_y over x = 0.52), mm; mixed P2/P1; mu = %g Pa, rho g = %g N/m^3"
          % (MU, RHO * G))
    hdr = "%-8s %-9s %-7s" % ("clamp", "K/mu", "nu") + "".join("%10s" % ("H/%d" % n) for n in levels) \
        + "%10s %9s %9s" % ("fine2 d%", "Timo4mu", "TimoE'")
    print(hdr)
    print("-" * len(hdr))
    for xc in CLAMPS:
        for r in ratios:
            nu = nu_of(r)
            vals = [1e3 * res[xc, n, r] for n in levels]
            dd = 100 * (vals[-1] - vals[-2]) / vals[-1] if len(vals) > 1 else float("nan")
            E = 2 * MU * (1 + nu)
            print("%-8s %-9s %-7.4f" % ("%d/64" % round(xc * 64), "inf" if np.isinf(r) else "%g" % r, nu)
                  + "".join("%10.4f" % v for v in vals)
                  + "%10.3f %9.4f %9.4f" % (dd, 1e3 * timoshenko(xc), 1e3 * timoshenko(xc, E / (1 - nu ** 2))))
    print("(fine2 d% = (finest - next) / finest; Timo4mu: Timoshenko with E' = 4 mu; TimoE': with E' = E/(1-nu^2))")

    if not args.no_nonlinear:
        n = levels[len(levels) // 2]
        print("\nNonlinear check (neo-Hookean mu/2 (I1bar - 3) + K/2 (J-1)^2, mixed, Newton, dead load), h = H/%d:" % n)
        for xc in CLAMPS:
            pr = Cantilever(xc, H / n)
            for r in (np.inf, 30.0):
                u, it = pr.solve_nonlinear(r)
                s = 1e3 * pr.tip_sag(u)
                print("  clamp %d/64, K/mu %-4s: %.4f mm (linear %.4f, %+.3f %%), %d Newton its"
                      % (round(xc * 64), "inf" if np.isinf(r) else "%g" % r, s, 1e3 * res[xc, n, r],
                         100 * (s / (1e3 * res[xc, n, r]) - 1), it))
    print("\nrun time %.1f s" % (time.time() - t0))


if __name__ == "__main__":
    main()
