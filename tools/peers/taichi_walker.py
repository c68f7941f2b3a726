"""The walker2d scene of examples/walker2d.lua written in Taichi, to time cqlua against Taichi's autodiff in the
same run (tools/bench_peers.lua) and to cross-check the physics. Written from cqlua's engine/*.h, not from
DiffTaichi's diffmpm.py (which only fixed the scene parameters).

usage: python3 tools/peers/taichi_walker.py [--iters N] [--threads T] [--weights FILE.json] [--lr LR]

One line per optimization iteration (forward + backward + gradient step) with the loss and seconds; the last
line is machine readable:
  RESULT taichi=1.7.4 threads=2 particles=2976 steps=1023 loss=l1,l2,... seconds=s1,s2,... cpu=c1,c2,...
(cpu: process CPU seconds of each iteration, all threads).
FILE.json holds the initial controller parameters {"W": [[4 numbers] x 4], "b": [4 numbers]}; without it W and
b start at zero.

Physics (one step, as cqlua's engine does it, float32):
  P2G   quadratic B-splines, APIC; tau = P F^T + F A F^T with P = 2 mu (F - R) + lambda (J - 1) cof(F)
        (fixed corotated) and A = diag(0, 4 u) for the particles of a leg actuator;
        node momentum += w (m v + (-(4/dx^2) dt V0 tau + m C) (x_i - x_p)), node mass += w m
  grid  v = p / m + dt g; within 3 cells of a wall, a node moving into it stops (friction wall with an
        infinite coefficient: no slip while in contact, free to separate); empty nodes get v = 0
  G2P   v = sum w v_i, C = 4/dx^2 sum w v_i (x_i - x_p)^T, F = (I + dt C) F, x = x + dt v
Gradients: each kernel's Taichi adjoint (kernel.grad); the grid of every step is recomputed during the backward
pass, the particle states of all steps are stored.
"""
import argparse
import json
import math
import sys
import time

import numpy as np
import taichi as ti

# Scene (examples/walker2d.lua)
N_GRID = 128
DX = 1 / N_GRID
INV_DX = float(N_GRID)
DT = 1e-3
STEPS = 1023
GRAVITY = (0.0, -3.8)
MU, LAMBDA = 10.0, 10.0
MASS, VOL = 1.0, 1.0
ACT_STRENGTH = 4.0
BOUND = 3
N_ACT, N_SIN, OMEGA = 4, 4, 20.0


def particles():
    """Positions and actuator ids (-1: none) of the robot: a 0.3 x 0.1 body on four 0.05 x 0.1 legs, 2 particles
    per dx per axis, as examples/walker2d.lua's rect() (computed in double, stored as float32)."""
    pos, act = [], []

    def rect(x, y, w, h, a):
        nw, nh = math.floor(w / DX) * 2, math.floor(h / DX) * 2
        for i in range(nw):
            for j in range(nh):
                pos.append((0.1 + x + (i + 0.5) * w / nw, 0.03 + y + (j + 0.5) * h / nh))
                act.append(a)

    rect(0.0, 0.1, 0.3, 0.1, -1)
    for k, x in enumerate([0.0, 0.05, 0.2, 0.25]):
        rect(x, 0.0, 0.05, 0.1, k)
    return np.array(pos, dtype=np.float64), np.array(act, dtype=np.int32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2, help="Taichi cpu_max_num_threads")
    ap.add_argument("--weights", help='JSON file {"W": 4x4, "b": 4} with the initial controller parameters')
    ap.add_argument("--lr", type=float, default=0.1)
    args = ap.parse_args()

    ti.init(arch=ti.cpu, default_fp=ti.f32, cpu_max_num_threads=args.threads)
    pos, act = particles()
    n = len(pos)

    # Particle state of every step (for the backward pass), grid of one step, controller.
    x = ti.Vector.field(2, ti.f32, shape=(STEPS + 1, n), needs_grad=True)
    v = ti.Vector.field(2, ti.f32, shape=(STEPS + 1, n), needs_grad=True)
    C = ti.Matrix.field(2, 2, ti.f32, shape=(STEPS + 1, n), needs_grad=True)
    F = ti.Matrix.field(2, 2, ti.f32, shape=(STEPS + 1, n), needs_grad=True)
    actuator = ti.field(ti.i32, shape=n)
    grid_p = ti.Vector.field(2, ti.f32, shape=(N_GRID, N_GRID), needs_grad=True)  # momentum
    grid_m = ti.field(ti.f32, shape=(N_GRID, N_GRID), needs_grad=True)
    grid_v = ti.Vector.field(2, ti.f32, shape=(N_GRID, N_GRID), needs_grad=True)
    W = ti.field(ti.f32, shape=(N_ACT, N_SIN), needs_grad=True)
    b = ti.field(ti.f32, shape=N_ACT, needs_grad=True)
    phase = ti.field(ti.f32, shape=(STEPS, N_SIN))  # sin(omega k dt + 2 pi j / n_sin), computed in double
    u = ti.field(ti.f32, shape=(STEPS, N_ACT), needs_grad=True)
    mean_x = ti.field(ti.f64, shape=())

    gravity = ti.Vector(GRAVITY)

    @ti.kernel
    def controller():
        """u[k, i] = tanh(sum_j W[i, j] phase[k, j] + b[i]) for every control step k."""
        for k, i in u:
            z = b[i]
            for j in ti.static(range(N_SIN)):
                z += W[i, j] * phase[k, j]
            u[k, i] = ti.tanh(z)

    @ti.kernel
    def clear_grid():
        for i, j in grid_m:
            grid_p[i, j] = ti.Vector([0.0, 0.0])
            grid_m[i, j] = 0.0
            grid_p.grad[i, j] = ti.Vector([0.0, 0.0])
            grid_m.grad[i, j] = 0.0
            grid_v.grad[i, j] = ti.Vector([0.0, 0.0])

    @ti.kernel
    def p2g(s: ti.i32):
        for p in range(n):
            xg = x[s, p] * INV_DX
            base = ti.cast(ti.floor(xg - 0.5), ti.i32)
            fx = xg - ti.cast(base, ti.f32)
            w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
            Fp = F[s, p]
            # rotation of the polar decomposition F = R S, closed form (engine/stages/smallmat.h polar)
            ra, rb = Fp[0, 0] + Fp[1, 1], Fp[1, 0] - Fp[0, 1]
            rn = ti.sqrt(ra * ra + rb * rb)
            R = ti.Matrix([[ra / rn, -rb / rn], [rb / rn, ra / rn]])
            J = Fp.determinant()
            cof = ti.Matrix([[Fp[1, 1], -Fp[1, 0]], [-Fp[0, 1], Fp[0, 0]]])  # J F^{-T}
            P = 2.0 * MU * (Fp - R) + LAMBDA * (J - 1.0) * cof
            tau = P @ Fp.transpose()
            a = actuator[p]
            if a >= 0:
                A = ti.Matrix([[0.0, 0.0], [0.0, ACT_STRENGTH * u[s, a]]])
                tau += Fp @ A @ Fp.transpose()
            G = (-4.0 * INV_DX * INV_DX * DT * VOL) * tau + MASS * C[s, p]
            mv = MASS * v[s, p]
            for i, j in ti.static(ti.ndrange(3, 3)):
                off = ti.Vector([i, j])
                dpos = (ti.cast(off, ti.f32) - fx) * DX
                weight = w[i][0] * w[j][1]
                grid_p[base + off] += weight * (mv + G @ dpos)
                grid_m[base + off] += weight * MASS

    @ti.kernel
    def grid_update():
        for i, j in grid_m:
            vn = ti.Vector([0.0, 0.0])
            m = grid_m[i, j]
            if m > 0:
                vn = grid_p[i, j] / m + DT * gravity
                if i < BOUND and vn[0] < 0:
                    vn = ti.Vector([0.0, 0.0])
                if i >= N_GRID - BOUND and vn[0] > 0:
                    vn = ti.Vector([0.0, 0.0])
                if j < BOUND and vn[1] < 0:
                    vn = ti.Vector([0.0, 0.0])
                if j >= N_GRID - BOUND and vn[1] > 0:
                    vn = ti.Vector([0.0, 0.0])
            grid_v[i, j] = vn

    @ti.kernel
    def g2p(s: ti.i32):
        for p in range(n):
            xp = x[s, p]
            xg = xp * INV_DX
            base = ti.cast(ti.floor(xg - 0.5), ti.i32)
            fx = xg - ti.cast(base, ti.f32)
            w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
            vp = ti.Vector([0.0, 0.0])
            B = ti.Matrix([[0.0, 0.0], [0.0, 0.0]])
            for i, j in ti.static(ti.ndrange(3, 3)):
                off = ti.Vector([i, j])
                dpos = (ti.cast(off, ti.f32) - fx) * DX
                weight = w[i][0] * w[j][1]
                vi = grid_v[base + off]
                vp += weight * vi
                B += weight * vi.outer_product(dpos)
            Cp = 4.0 * INV_DX * INV_DX * B
            v[s + 1, p] = vp
            C[s + 1, p] = Cp
            F[s + 1, p] = (ti.Matrix.identity(ti.f32, 2) + DT * Cp) @ F[s, p]
            x[s + 1, p] = xp + DT * vp

    @ti.kernel
    def final_mean_x():
        mean_x[None] = 0.0
        for p in range(n):
            mean_x[None] += ti.cast(x[STEPS, p][0], ti.f64) / n

    @ti.kernel
    def seed_loss_grad():
        """dL/dx_T for L = -mean x-coordinate of the final state."""
        for p in range(n):
            x.grad[STEPS, p][0] = -1.0 / n

    # Initial state and controller inputs.
    x0 = np.zeros((STEPS + 1, n, 2), dtype=np.float32)
    x0[0] = pos
    x.from_numpy(x0)
    F0 = np.zeros((STEPS + 1, n, 2, 2), dtype=np.float32)
    F0[0] = np.eye(2)
    F.from_numpy(F0)
    actuator.from_numpy(act)
    phase.from_numpy(np.array([[math.sin(OMEGA * k * 1e-3 + 2 * math.pi * j / N_SIN) for j in range(N_SIN)]
                               for k in range(STEPS)]))
    Wv, bv = np.zeros((N_ACT, N_SIN)), np.zeros(N_ACT)
    if args.weights:
        with open(args.weights) as f:
            init = json.load(f)
        Wv, bv = np.array(init["W"], dtype=np.float64), np.array(init["b"], dtype=np.float64)
    del x0, F0

    def forward():
        controller()
        for s in range(STEPS):
            clear_grid()
            p2g(s)
            grid_update()
            g2p(s)
        final_mean_x()
        return -mean_x[None]

    def backward():
        for field in (x, v, C, F, u, W, b):
            field.grad.fill(0)
        seed_loss_grad()
        for s in reversed(range(STEPS)):
            clear_grid()  # recompute this step's grid, then run the step's adjoint
            p2g(s)
            grid_update()
            g2p.grad(s)
            grid_update.grad()
            p2g.grad(s)
        controller.grad()

    print(f"taichi_walker: {n} particles, {STEPS} steps, f32, Taichi {'.'.join(map(str, ti.__version__))} CPU, "
          f"{args.threads} threads")
    sys.stdout.flush()
    losses, seconds, cpu = [], [], []
    for it in range(1, args.iters + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        W.from_numpy(Wv.astype(np.float32))
        b.from_numpy(bv.astype(np.float32))
        loss = forward()
        backward()
        Wv = Wv - args.lr * W.grad.to_numpy()
        bv = bv - args.lr * b.grad.to_numpy()
        dt = time.perf_counter() - t0
        losses.append(loss)
        seconds.append(dt)
        cpu.append(time.process_time() - c0)
        print(f"iter {it:3d}  loss {loss:.7f}  {dt:.3f} s/iter")
        sys.stdout.flush()
    print("RESULT taichi=%s threads=%d particles=%d steps=%d loss=%s seconds=%s cpu=%s" % (
        ".".join(map(str, ti.__version__)), args.threads, n, STEPS, ",".join("%.9g" % l for l in losses),
        ",".join("%.4f" % s for s in seconds), ",".join("%.4f" % s for s in cpu)))


if __name__ == "__main__":
    main()
