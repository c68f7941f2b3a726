#!/usr/bin/env python3
"""Independent finite-element reference for cqlua's 2D pneumatic finger (examples/pneumatic2d.lua), issue 62 item 6(b).

A check only: scikit-fem (PyPI) and gmsh (run as a program), nothing of cqlua's code. See tools/fem/README.md.

The model, in the drawing's own frame (scenes/finger2d.geo: x along the finger from its base, y across it, mm):
  * plane strain, quasi-static (no inertia, no damping);
  * Mooney-Rivlin, W = c10 (I1bar - 3) + c01 (I2bar - 3) + (K/2)(J - 1)^2 with I1bar, I2bar the isochoric invariants
    of F3 = [[F, 0], [0, 1]] (docs/api.md), c10 = 1.19 kPa, c01 = 23.028 kPa, K = 1.75 GPa (the dragonskin30 preset of
    lua/cq/materials.lua), density 1080 kg/m^3;
  * mixed displacement-pressure (Taylor-Hood P2/P1 triangles): Pi = int W_iso(F) + p (J - 1) - p^2 / (2K) dA, whose
    elimination of p gives back (K/2)(J - 1)^2 exactly, so it is the same energy without locking;
  * the base clamped: u = 0 for x <= CLAMP (3.5 mm: the drawing's part inside the sticky band's grid nodes in the
    example's placement; the mesh has a line there);
  * gravity rho g along +x (the finger hangs: the world's -y is the drawing's +x);
  * the chamber pressure pc on the 8 chambers' walls (the physical curve "chamber"), a follower load: traction
    -pc cof(F) N dA (Nanson, N the solid's outward normal, in 2D cof(F) = J F^-T is linear in F, so its consistent
    linearisation is pc cof(grad du) N), the cavities closed, so no net force is corrected away (it is zero);
  * Newton (full consistent Jacobian, sparse LU) with load continuation in pc (adaptive steps), from the
    gravity-loaded state at pc = 0.
The tip: the area-weighted mean displacement of the material with x >= L - 3 mm at rest (integrated over that region;
the mesh has a line there), relative to the gravity-loaded state at pc = 0, reported in the world's frame of the
example (world dx = drawing u_y, world dy = -drawing u_x).
Stability: at each reported pressure the lowest eigenvalues of the tangent stiffness (the pressure unknowns
eliminated, generalised problem K phi = lambda M phi with the displacement mass matrix; shift-invert ARPACK): a limit
point or bifurcation shows as lambda_1 -> 0; sqrt(lambda_1 / rho) is the first natural frequency of the loaded finger.

Units inside: mm and kPa (forces per unit depth in kPa mm = N/m).

usage: python3 tools/fem/finger2d_fem.py [--mesh 2,1,0.5] [--pressures 0.5,1,1.5,2,3,5,...] [--clamp 3.5]
       [--pelem P1|P0] [--lateral-g G] [--profile] [--csv FILE]
       [--geo YOUR.geo] [--material c10,c01,bulk,density] [--gravity 9.8]
       python3 tools/fem/finger2d_fem.py --verify   (the exact pressurised thick tube)
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import meshio
from skfem import (MeshTri, Basis, FacetBasis, ElementTriP0, ElementTriP1, ElementTriP2, ElementVector, BilinearForm, LinearForm,
                   Functional, asm)
from skfem.helpers import grad, ddot, dot

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GEO = os.path.join(ROOT, "scenes", "finger2d.geo")

C10, C01, BULK, RHO = 1.19, 23.028, 1.75e6, 1080.0  # kPa, kPa, kPa, kg/m^3
G = 9.8
RHOG = RHO * G * 1e-6  # N/m^3 = Pa/m -> kPa/mm: 1080 * 9.8 Pa/m = 1.0584e-2 kPa/mm
L, H = 100.0, 16.0
# the chambers, from the .geo: n = 8, cl = 8, gap = 3, x0 = 10, layer 3, bottom 2, roof 2
CHAMBERS = [(10.0 + i * 11.0, 10.0 + i * 11.0 + 8.0, 5.0, 14.0) for i in range(8)]


# ---------------------------------------------------------------------------------------------------------- mesh
def make_mesh(h, clamp, tip_from, keep=None, geo_path=None):
    """scenes/finger2d.geo meshed by gmsh at largest size h (as cqlua runs it: -clmax h -setnumber mesh_size h), with
    two extra lines cut through the section (x = clamp and x = tip_from) so that the clamp and the tip region are
    unions of elements. The drawing itself is not changed: the .geo's text with two rectangles fragmented in before
    its physical groups. geo_path (--geo): a user's drawing instead, meshed as it is (no cuts: the clamp and the tip
    region are then taken node by node and element by element)."""
    d = tempfile.mkdtemp(prefix="finger2d_fem_")
    msh = os.path.join(d, "finger2d.msh")
    if geo_path is None:
        src = open(GEO).read()
        marker = "e = 1e-3;"
        assert marker in src
        cut = ("cutA = news; Rectangle(cutA) = {0, 0, 0, %.17g, H};\n"
               "cutB = news; Rectangle(cutB) = {%.17g, 0, 0, L - %.17g, H};\n"
               "BooleanFragments{ Surface{:}; Delete; }{}\n") % (clamp, tip_from, tip_from)
        src = src.replace(marker, cut + marker, 1)
        geo = os.path.join(d, "finger2d_cut.geo")
        open(geo, "w").write(src)
    else:
        geo = os.path.abspath(geo_path)
    subprocess.run(["gmsh", "-2", "-format", "msh41", "-v", "2", "-clmax", repr(h), "-setnumber", "mesh_size", repr(h),
                    geo, "-o", msh], check=True, stdout=subprocess.DEVNULL)
    m = meshio.read(msh)
    tris, lines, line_tags = [], [], []
    for block, phys in zip(m.cells, m.cell_data["gmsh:physical"]):
        if block.type == "triangle":
            tris.append(block.data)
        elif block.type == "line":
            lines.append(block.data)
            line_tags.append(phys)
    tris = np.vstack(tris)
    used = np.unique(tris)
    remap = -np.ones(len(m.points), dtype=np.int64)
    remap[used] = np.arange(len(used))
    p = m.points[used, :2].T.copy()
    t = remap[tris].T.copy()
    mesh = MeshTri(p, t)  # skfem orients the triangles
    # the physical curve "chamber", as gmsh tags it
    names = {v[0]: k for k, v in m.field_data.items() if v[1] == 1}
    chamber_tags = [k for k, v in names.items() if v == "chamber"]
    if not chamber_tags:
        sys.exit("finger2d_fem: %s has no physical curve \"chamber\" (its physical curves: %s)"
                 % (geo, ", ".join(sorted(names.values())) or "none"))
    chamber_tag = chamber_tags[0]
    ch_edges = np.vstack([remap[l[tg == chamber_tag]] for l, tg in zip(lines, line_tags)])
    if keep is not None:
        import shutil
        shutil.copy(msh, keep)
    return mesh, ch_edges


def facets_of_edges(mesh, edges):
    key = {tuple(sorted(f)): i for i, f in enumerate(mesh.facets.T)}
    return np.array([key[tuple(sorted(e))] for e in edges], dtype=np.int64)


# ----------------------------------------------------------------------------------------------------- material
def cof(F):
    return np.array([[F[1, 1], -F[1, 0]], [-F[0, 1], F[0, 0]]])


def P_iso(F):
    """First Piola stress of c10 (I1bar - 3) + c01 (I2bar - 3), plane strain (F3 = diag(F, 1)); F: (2, 2, ...)."""
    J = F[0, 0] * F[1, 1] - F[0, 1] * F[1, 0]
    cf = cof(F)
    C = np.einsum("ki...,kj...->ij...", F, F)
    I1 = C[0, 0] + C[1, 1] + 1.0
    I2 = 0.5 * (I1 ** 2 - (np.einsum("ij...,ij...->...", C, C) + 1.0))
    FC = np.einsum("ik...,kj...->ij...", F, C)
    return (C10 * (J ** (-2.0 / 3.0) * 2.0 * F - (2.0 / 3.0) * J ** (-5.0 / 3.0) * I1 * cf)
            + C01 * (J ** (-4.0 / 3.0) * (2.0 * I1 * F - 2.0 * FC) - (4.0 / 3.0) * J ** (-7.0 / 3.0) * I2 * cf))


def W_iso(F):
    J = F[0, 0] * F[1, 1] - F[0, 1] * F[1, 0]
    C = np.einsum("ki...,kj...->ij...", F, F)
    I1 = C[0, 0] + C[1, 1] + 1.0
    I2 = 0.5 * (I1 ** 2 - (np.einsum("ij...,ij...->...", C, C) + 1.0))
    return C10 * (J ** (-2.0 / 3.0) * I1 - 3.0) + C01 * (J ** (-4.0 / 3.0) * I2 - 3.0)


def A_iso(F):
    """dP/dF by complex step (exact to round-off): A[i, j, k, l] = dP_ij / dF_kl."""
    h = 1e-30
    A = np.zeros((2, 2, 2, 2) + F.shape[2:])
    for k in range(2):
        for l in range(2):
            Fc = F.astype(complex)
            Fc[k, l] = Fc[k, l] + 1j * h
            A[:, :, k, l] = P_iso(Fc).imag / h
    return A


def self_check():
    rng = np.random.default_rng(1)
    F = np.eye(2)[:, :, None] + 0.3 * rng.standard_normal((2, 2, 5))
    e = 1e-6
    P = P_iso(F)
    for k in range(2):
        for l in range(2):
            dF = np.zeros_like(F)
            dF[k, l] = e
            fd = (W_iso(F + dF) - W_iso(F - dF)) / (2 * e)
            assert np.allclose(fd, P[k, l], rtol=1e-6, atol=1e-8), (fd, P[k, l])
    assert np.allclose(P_iso(np.eye(2)[:, :, None]), 0, atol=1e-12)
    # small-strain shear modulus 2 (c10 + c01)
    g = 1e-6
    Fs = np.array([[1.0, g], [0.0, 1.0]])[:, :, None]
    assert abs(P_iso(Fs)[0, 1, 0] / g - 2 * (C10 + C01)) < 1e-4 * (C10 + C01)


# ------------------------------------------------------------------------------------------------------- forms
@BilinearForm
def a_uu(du, v, w):
    return np.einsum("ijkl...,kl...,ij...->...", w["A"].value, grad(du), grad(v)) + w["p"] * ddot(cof(grad(du)), grad(v))


@BilinearForm
def b_up(du, q, w):  # rows: pressure test q, columns: displacement trial du
    return q * ddot(w["cofF"].value, grad(du))


@BilinearForm
def m_pp(dp, q, w):
    return dp * q


@BilinearForm
def m_uu(du, v, w):
    return dot(du, v)


@LinearForm
def r_u(v, w):
    P = w["P"].value + w["p"] * w["cofF"].value
    return ddot(P, grad(v)) - w["bx"] * v[0] - w["by"] * v[1]


@LinearForm
def r_p(q, w):
    return q * (w["J"].value - 1.0 - w["p"] / BULK)


@LinearForm
def r_ch(v, w):  # the chamber's follower load, + pc cof(F) N . v (N: the solid's outward normal)
    F = np.eye(2)[:, :, None, None] + grad(w["u"])
    return w["pc"] * dot(np.einsum("ij...,j...->i...", cof(F), w.n), v)


@BilinearForm
def k_ch(du, v, w):
    return w["pc"] * dot(np.einsum("ij...,j...->i...", cof(grad(du)), w.n), v)


@Functional
def tip_area(w):
    return w["ind"].value


# ---------------------------------------------------------------------------------------------------- problem
class Mixed:
    """The mixed P2/P1 (or P2/P0) hyperelastic problem on a mesh: a follower pressure pc on the facets chf, body force
    (bx, by) per volume (kPa/mm), the displacement unknowns `fixed` held at 0."""

    def __init__(self, mesh, chf, pelem="P1", body=None):
        self.mesh, self.chf, self.pelem = mesh, chf, pelem
        self.bx, self.by = body if body is not None else (RHOG, 0.0)
        self.ub = Basis(mesh, ElementVector(ElementTriP2()), intorder=4)
        self.pb = Basis(mesh, ElementTriP1() if pelem == "P1" else ElementTriP0(), intorder=4)
        self.fb = FacetBasis(mesh, ElementVector(ElementTriP2()), facets=chf, intorder=4)
        self.Nu, self.Np = self.ub.N, self.pb.N
        self.Mp = m_pp.assemble(self.pb)
        self.Mu = m_uu.assemble(self.ub)

    def set_fixed(self, fixed):
        self.fixed = fixed
        self.free = np.setdiff1d(np.arange(self.Nu + self.Np), fixed)

    def fields(self, x):
        u, p = x[:self.Nu], x[self.Nu:]
        uf = self.ub.interpolate(u)
        pf = self.pb.interpolate(p)
        F = np.eye(2)[:, :, None, None] + uf.grad
        J = F[0, 0] * F[1, 1] - F[0, 1] * F[1, 0]
        return u, uf, pf, F, J

    def residual(self, x, pc, jac=True):
        u, uf, pf, F, J = self.fields(x)
        if J.min() <= 0:
            return None, None
        P, cF = P_iso(F), cof(F)
        Ru = r_u.assemble(self.ub, P=P, p=pf, cofF=cF, bx=self.bx, by=self.by)
        if pc != 0:
            Ru = Ru + r_ch.assemble(self.fb, u=self.fb.interpolate(u), pc=pc)
        Rp = r_p.assemble(self.pb, p=pf, J=J)
        R = np.concatenate([Ru, Rp])
        if not jac:
            return R, None
        Kuu = a_uu.assemble(self.ub, A=A_iso(F), p=pf)
        if pc != 0:
            Kuu = Kuu + k_ch.assemble(self.fb, pc=pc)
        B = b_up.assemble(self.ub, self.pb, cofF=cF)
        Kt = sp.bmat([[Kuu, B.T], [B, -self.Mp / BULK]], format="csr")
        return R, Kt

    def newton(self, x, pc, tol=1e-9, maxit=25):
        """Newton with a backtracking line search on ||R||; returns (x, iterations) or (None, why)."""
        x = x.copy()
        R, Kt = self.residual(x, pc)
        if R is None:
            return None, "inverted"
        scale = None
        for it in range(1, maxit + 1):
            Rf = R[self.free]
            nr = np.linalg.norm(Rf)
            if scale is None:
                scale = max(nr, 1e-3)
            dx = np.zeros_like(x)
            dx[self.free] = spla.spsolve(Kt[self.free][:, self.free].tocsc(), -Rf)
            step = 1.0
            while True:
                xn = x + step * dx
                Rn, _ = self.residual(xn, pc, jac=False)
                if Rn is not None and np.all(np.isfinite(Rn)) and np.linalg.norm(Rn[self.free]) < (1 - 1e-4 * step) * nr:
                    break
                if Rn is not None and np.all(np.isfinite(Rn)) and nr < 1e-8:
                    break  # at round-off
                step *= 0.5
                if step < 1e-4:
                    return None, "line search failed at |R| %.3e" % nr
            x = xn
            du = np.abs(step * dx[:self.Nu]).max()
            R, Kt = self.residual(x, pc)
            if R is None:
                return None, "inverted"
            if du < tol and np.linalg.norm(R[self.free]) < 1e-6 * scale + 1e-10:
                self.last_K = Kt
                return x, it
        return None, "no convergence in %d iterations (|R| %.3e, |du| %.3e mm)" % (maxit, np.linalg.norm(R[self.free]), du)

    def lowest_eigs(self, Kt, k=3):
        """Lowest eigenvalues of the tangent with the pressure unknowns eliminated: K phi = lambda M phi, M the
        displacement mass matrix (zero on the pressure unknowns), by shift-invert about a small negative shift."""
        Ks = 0.5 * (Kt + Kt.T)
        M = sp.bmat([[self.Mu, None], [None, sp.csr_matrix((self.Np, self.Np))]], format="csr")
        f = self.free
        Kf, Mf = Ks[f][:, f].tocsc(), M[f][:, f].tocsc()
        sigma = -1e-6
        lu = spla.splu((Kf - sigma * Mf).tocsc())
        op = spla.LinearOperator(Kf.shape, matvec=lu.solve)
        vals = spla.eigsh(Kf, k=k, M=Mf, sigma=sigma, which="LM", OPinv=op, return_eigenvectors=False)
        return np.sort(vals)


class Finger(Mixed):
    def __init__(self, h, clamp=3.5, tip_len=3.0, keep=None, pelem="P1", geo_path=None):
        self.h, self.clamp = h, clamp
        mesh, ch_edges = make_mesh(h, clamp, L - tip_len, keep, geo_path)
        Mixed.__init__(self, mesh, facets_of_edges(mesh, ch_edges), pelem)
        if geo_path is not None:  # a user's drawing: no checks of the chambers' geometry, the tip at its own end
            length = mesh.p[0].max()
            self.set_fixed(np.nonzero(self.ub.doflocs[0] <= clamp + 1e-9)[0])
            if len(self.fixed) == 0:
                sys.exit("finger2d_fem: no node of %s lies at x <= --clamp %g mm (its x runs from %g to %g mm)"
                         % (geo_path, clamp, mesh.p[0].min(), length))
            cx = mesh.p[0, mesh.t].mean(axis=0)
            ind = (cx > length - tip_len).astype(float)
            self.ind = np.repeat(ind[:, None], self.ub.X.shape[-1], axis=1)
            self.tip_A = tip_area.assemble(self.ub, ind=self.ind)
            return
        # the physical curve is the chambers' walls and nothing else
        mid = mesh.p[:, mesh.facets[:, self.chf]].mean(axis=1)
        on = np.zeros(mid.shape[1], dtype=bool)
        for (xa, xb, ya, yb) in CHAMBERS:
            inside = (mid[0] > xa - 1e-9) & (mid[0] < xb + 1e-9) & (mid[1] > ya - 1e-9) & (mid[1] < yb + 1e-9)
            edge = (np.abs(mid[0] - xa) < 1e-9) | (np.abs(mid[0] - xb) < 1e-9) | (np.abs(mid[1] - ya) < 1e-9) | \
                   (np.abs(mid[1] - yb) < 1e-9)
            on |= inside & edge
        assert on.all(), "a chamber facet off the chambers' walls"
        flen = np.linalg.norm(np.diff(mesh.p[:, mesh.facets[:, self.chf]], axis=1)[:, 0], axis=0).sum()
        assert abs(flen - 8 * 2 * (8 + 9)) < 1e-9, flen
        self.set_fixed(np.nonzero(self.ub.doflocs[0] <= clamp + 1e-9)[0])
        cx = mesh.p[0, mesh.t].mean(axis=0)
        ind = (cx > L - tip_len).astype(float)
        self.ind = np.repeat(ind[:, None], self.ub.X.shape[-1], axis=1)
        self.tip_A = tip_area.assemble(self.ub, ind=self.ind)

    def tip(self, x):
        """The area-weighted mean displacement over the tip region (x >= L - 3 mm at rest), drawing frame, mm."""
        uf = self.ub.interpolate(x[:self.Nu])
        return np.array([tip_area.assemble(self.ub, ind=self.ind * uf.value[a]) / self.tip_A for a in range(2)])


# ---------------------------------------------------------------------------------------------- verification
def exact_annulus(p, A, B, mu):
    """Inner radius a of an incompressible neo-Hookean (plane strain: Mooney-Rivlin with mu = 2 (c10 + c01)) annulus
    A < R < B under inner pressure p, outer face free: r^2 = R^2 + c, hoop stretch lam = r / R, sigma_theta - sigma_r =
    mu (lam^2 - lam^-2), p = int_a^b (sigma_theta - sigma_r) / r dr."""
    from scipy.integrate import quad
    from scipy.optimize import brentq

    def pressure(a):
        c = a * a - A * A
        b = np.sqrt(B * B + c)
        f = lambda r: mu * (r * r / (r * r - c) - (r * r - c) / (r * r)) / r
        return quad(f, a, b, epsabs=1e-13, epsrel=1e-12)[0]
    return brentq(lambda a: pressure(a) - p, A, 20 * A, xtol=1e-14)


def verify_annulus(hs=(0.4, 0.2, 0.1), A=4.0, B=8.0, pressures=(5.0, 10.0, 20.0), pelem="P1", log=print):
    """The follower pressure, the material and the mixed formulation against the exact large-deformation solution of
    a pressurised thick tube in plane strain (a quarter annulus, symmetry on the axes), K / mu = 3.6e4 as the
    finger's: the inner radius, FEM against exact."""
    mu = 2 * (C10 + C01)
    out = []
    for h in hs:
        geo = ('SetFactory("OpenCASCADE");\nDisk(1) = {0, 0, 0, %g};\nDisk(2) = {0, 0, 0, %g};\n'
               'Rectangle(3) = {0, 0, 0, %g, %g};\nBooleanDifference(4) = { Surface{1}; Delete; }{ Surface{2}; Delete; };\n'
               'BooleanIntersection(5) = { Surface{4}; Delete; }{ Surface{3}; Delete; };\nPhysical Surface("s") = {5};\n'
               'Mesh.MeshSizeMax = %g;\n') % (B, A, 2 * B, 2 * B, h)
        d = tempfile.mkdtemp(prefix="annulus_")
        gp, mp = os.path.join(d, "a.geo"), os.path.join(d, "a.msh")
        open(gp, "w").write(geo)
        subprocess.run(["gmsh", "-2", "-format", "msh41", "-v", "2", gp, "-o", mp], check=True, stdout=subprocess.DEVNULL)
        m = meshio.read(mp)
        tris = np.vstack([c.data for c in m.cells if c.type == "triangle"])
        used = np.unique(tris)
        remap = -np.ones(len(m.points), dtype=np.int64)
        remap[used] = np.arange(len(used))
        mesh = MeshTri(m.points[used, :2].T.copy(), remap[tris].T.copy())
        bf = mesh.boundary_facets()
        r = np.linalg.norm(mesh.p[:, mesh.facets[:, bf]], axis=0)  # (2, nf): both ends' radii
        inner = bf[np.all(np.abs(r - A) < 1e-6 * A, axis=0)]
        pr = Mixed(mesh, inner, pelem, body=(0.0, 0.0))
        fx = pr.ub.get_dofs(lambda x: np.abs(x[0]) < 1e-9).all(["u^1"])
        fy = pr.ub.get_dofs(lambda x: np.abs(x[1]) < 1e-9).all(["u^2"])
        pr.set_fixed(np.union1d(fx, fy))
        vin = np.unique(mesh.facets[:, inner])
        x = np.zeros(pr.Nu + pr.Np)
        pc = 0.0
        for target in pressures:
            while pc < target - 1e-12:
                step = min(1.0, target - pc)
                x, it = pr.newton(x, pc + step)
                assert x is not None, it
                pc += step
            u = x[:pr.Nu]
            ux, uy = u[pr.ub.nodal_dofs[0, vin]], u[pr.ub.nodal_dofs[1, vin]]
            a_fem = np.mean(np.hypot(mesh.p[0, vin] + ux, mesh.p[1, vin] + uy))
            a_ex = exact_annulus(target, A, B, mu)
            out.append((h, target, a_fem, a_ex))
            log("annulus %g-%g mm, mesh %g mm (%s), p = %g kPa (%.3g mu): inner radius %.6f mm, exact %.6f mm, "
                "error in a - A %.3f %%" % (A, B, h, pelem, target, target / mu, a_fem, a_ex,
                                           100 * (a_fem - a_ex) / (a_ex - A)))
            sys.stdout.flush()
    return out


def probe_points():
    """The chambers' shape probes (drawing frame, mm), the same as tools/fem/finger2d_mpm.lua's probe=true: for chamber
    i, the roof's and the floor's mid-lines (y 15 and 4) at the chamber's middle and at the walls' middles on either
    side, and the walls' middles at the chamber's half height (y 9.5)."""
    pts = []
    for i in range(8):
        xl, xc, xr = 8.5 + 11 * i, 14.0 + 11 * i, 19.5 + 11 * i
        pts += [(xl, 15.0), (xc, 15.0), (xr, 15.0), (xl, 4.0), (xc, 4.0), (xr, 4.0), (xl, 9.5), (xr, 9.5)]
    return np.array(pts).T


def chamber_metrics(cur):
    """Per chamber: the roof's and the floor's bulge (the mid-point's signed distance from the chord between the walls'
    middles, + towards the drawing's +y when straight), the chamber's height (roof mid to floor mid) and its spread
    (wall middle to wall middle at half height), mm, from the 8 probes' current positions (2, 64)."""
    out = []
    for i in range(8):
        q = cur[:, 8 * i:8 * i + 8]
        def bulge(a, m, b):
            d = q[:, b] - q[:, a]
            n = np.array([-d[1], d[0]]) / np.hypot(d[0], d[1])
            return float((q[:, m] - 0.5 * (q[:, a] + q[:, b])) @ n)
        out.append((bulge(0, 1, 2), bulge(3, 4, 5), float(np.hypot(*(q[:, 1] - q[:, 4]))),
                    float(np.hypot(*(q[:, 7] - q[:, 6])))))
    return out


def sweep(h, targets, clamp, pmax_step=0.25, log=print, keep=None, pelem="P1", lateral_g=0.0, profile=False,
          geo_path=None, probe=False):
    t0 = time.time()
    fg = Finger(h, clamp=clamp, keep=keep, pelem=pelem, geo_path=geo_path)
    log("mesh %g mm: %d triangles, %d + %d unknowns (P2 displacement, %s pressure), %d chamber facets, clamp x <= %g mm"
        % (h, fg.mesh.t.shape[1], fg.Nu, fg.Np, pelem, len(fg.chf), clamp))
    x = np.zeros(fg.Nu + fg.Np)
    x, it = fg.newton(x, 0.0)
    assert x is not None, it
    rest, xr = fg.tip(x), x.copy()
    lam = fg.lowest_eigs(fg.last_K)
    # world frame of the example: world x = drawing y, world y = -drawing x
    log("  0 kPa (gravity): %d Newton iterations, tip moved (world dx %.4f, dy %.4f) mm from the drawing, "
        "lambda_1 %.4g (first natural frequency %.2f rad/s)" % (it, rest[1], -rest[0], lam[0],
                                                                np.sqrt(lam[0] * 1e9 / RHO)))
    if lateral_g:
        # the bending check: the finger loaded sideways by gravity lateral_g (m/s^2, the world's x: the drawing's y),
        # no pressure; the tip's displacement from the rest state (gravity along the finger only)
        xl, it = x, 0
        for k in range(1, 11):  # in 10 load steps
            fg.by = RHO * lateral_g * 1e-6 * k / 10
            xl, i = fg.newton(xl, 0.0)
            assert xl is not None, i
            it += i
        t = fg.tip(xl) - rest
        log("  lateral gravity %g m/s^2 (world x), 0 kPa: tip moved %.4f mm (world dx %.4f, dy %.4f), %d Newton "
            "iterations" % (lateral_g, np.hypot(t[0], t[1]), t[1], -t[0], it))
        fg.by = 0.0
    rows = []
    pc, dp, nsteps = 0.0, 0.05, 0
    xs = x
    for target in targets:
        while pc < target - 1e-12:
            step = min(dp, target - pc)
            xn, it = fg.newton(xs, pc + step)
            if xn is None:
                dp = step / 2
                if dp < 1e-4:
                    log("  Newton fails at %.4f kPa (from %.4f kPa with steps down to %.1e kPa): %s"
                        % (pc + step, pc, step, it))
                    return rows, fg, time.time() - t0, pc
                continue
            pc, xs = pc + step, xn
            nsteps += 1
            if it <= 4:
                dp = min(pmax_step, 1.5 * step)
        t = fg.tip(xs) - rest
        lam = fg.lowest_eigs(fg.last_K)
        wx, wy = t[1], -t[0]
        u = xs[:fg.Nu]
        J = fg.fields(xs)[4]
        rows.append((target, wx, wy, np.hypot(wx, wy), lam[0]))
        if profile:
            du = xs[:fg.Nu] - xr[:fg.Nu]
            duy = fg.ub.interpolate(du).value[1]  # the drawing's y: the world's x
            cx = fg.mesh.p[0, fg.mesh.t].mean(axis=0)
            prof = []
            for b in range(20):
                ind = np.repeat(((cx >= 5 * b) & (cx < 5 * b + 5)).astype(float)[:, None], fg.ub.X.shape[-1], axis=1)
                prof.append("%g:%.4f" % (5 * b + 2.5, tip_area.assemble(fg.ub, ind=ind * duy) /
                                         tip_area.assemble(fg.ub, ind=ind)))
            log("  %6.3f kPa: profile (x_mm:world dx_mm) %s" % (target, " ".join(prof)))
        if probe:
            pts = probe_points()
            P = fg.ub.probes(pts)
            uv = P @ xs[:fg.Nu]
            cur = pts + uv.reshape(2, -1)
            log("  %6.3f kPa: chambers (roof bulge, floor bulge, height, spread mm) %s" % (target, " ".join(
                "%d:%.4f,%.4f,%.4f,%.4f" % ((i,) + m) for i, m in enumerate(chamber_metrics(cur)))))
        dA = fg.ub.dx
        log("  %6.3f kPa: tip moved %.4f mm (world dx %.4f, dy %.4f), lambda_1 %.4g (%.2f rad/s), max |u| %.3f mm, "
            "J at the quadrature points in [%.4f, %.4f], mean |J - 1| %.2e, Newton steps %d, %.0f s"
            % (target, np.hypot(wx, wy), wx, wy, lam[0], np.sqrt(max(lam[0], 0) * 1e9 / RHO), np.abs(u).max(),
               J.min(), J.max(), (np.abs(J - 1) * dA).sum() / dA.sum(), nsteps, time.time() - t0))
        sys.stdout.flush()
    return rows, fg, time.time() - t0, pc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mesh", default="2,1,0.5")
    ap.add_argument("--pressures", default="0.5,1,1.5,2,2.5,3,4,5,6,8,10,12,15,20,25,30")
    ap.add_argument("--clamp", type=float, default=3.5)
    ap.add_argument("--pelem", default="P1", choices=["P1", "P0"],
                    help="pressure element: P1 (Taylor-Hood P2/P1, the default) or P0 (P2/P0, a second check)")
    ap.add_argument("--lateral-g", type=float, default=0.0,
                    help="also the bending check: the tip under a sideways gravity (m/s^2, the world's x), no pressure")
    ap.add_argument("--verify", action="store_true",
                    help="only the check against the exact pressurised thick tube (annulus), then exit")
    ap.add_argument("--profile", action="store_true",
                    help="also print the sideways deflection along the finger (5 mm bins, area-weighted)")
    ap.add_argument("--probe", action="store_true",
                    help="also print each chamber's shape: roof and floor bulge, height, spread (see chamber_metrics)")
    ap.add_argument("--csv", default=None)
    ap.add_argument("--geo", default=None,
                    help="your own section instead of scenes/finger2d.geo: in mm, x along the finger from its clamped "
                         "base at x = 0, a physical curve \"chamber\" on every chamber wall (see tools/fem/README.md)")
    ap.add_argument("--material", default=None,
                    help="c10,c01,bulk,density (kPa, kPa, kPa, kg/m^3) of a Mooney-Rivlin material instead of the "
                         "dragonskin30 preset (1.19,23.028,1.75e6,1080)")
    ap.add_argument("--gravity", type=float, default=G,
                    help="gravity along the drawing's +x (the finger hangs from its base), m/s^2 (default 9.8)")
    a = ap.parse_args()
    global C10, C01, BULK, RHO, RHOG
    if a.material:
        try:
            C10, C01, BULK, RHO = (float(v) for v in a.material.split(","))
        except ValueError:
            sys.exit("finger2d_fem: --material must be c10,c01,bulk,density (four numbers), got %r" % a.material)
        if not (C10 + C01 > 0 and BULK > 0 and RHO > 0):
            sys.exit("finger2d_fem: --material needs c10 + c01 > 0, bulk > 0 and density > 0, got %r" % a.material)
    RHOG = RHO * a.gravity * 1e-6
    if a.geo and not os.path.exists(a.geo):
        sys.exit("finger2d_fem: --geo %s: no such file" % a.geo)
    self_check()
    if a.verify:
        verify_annulus(pelem=a.pelem)
        return
    targets = [float(v) for v in a.pressures.split(",")]
    out = []
    for h in [float(v) for v in a.mesh.split(",")]:
        rows, fg, secs, reached = sweep(h, targets, a.clamp, pelem=a.pelem, lateral_g=a.lateral_g,
                                         profile=a.profile, geo_path=a.geo, probe=a.probe)
        print("mesh %g mm: %.0f s wall" % (h, secs))
        sys.stdout.flush()
        for r in rows:
            out.append((h,) + r)
    print("mesh_mm,pressure_kPa,tip_dx_mm,tip_dy_mm,tip_mm,lambda1")
    for r in out:
        print("%g,%g,%.5f,%.5f,%.5f,%.5g" % r)
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("mesh_mm,pressure_kPa,tip_dx_mm,tip_dy_mm,tip_mm,lambda1\n")
            for r in out:
                f.write("%g,%g,%.5f,%.5f,%.5f,%.5g\n" % r)


if __name__ == "__main__":
    main()
