#!/usr/bin/env python3
"""all_reduce across a network link next to the cost model's prediction.

Usage (one command; root, for the namespaces):
    bash scripts/netns_hosts.sh run 2 -- .venv/bin/python bench/comm_wire.py [--build build]

Runs meshc-bench-comm (bench/comm/allreduce_latency.cpp: the runtime's
all_reduce, what a rank program calls for each shard.all_reduce) with one rank
on each of the two hosts of scripts/netns_hosts.sh, so that every byte crosses
the veth link over TCP. Prints, per size, the measured median next to what
`meshc plan` predicts for the same all_reduce between two nodes: alpha per
latency (2 for an all_reduce: a reduce-scatter and an all-gather) plus the
ring's bytes, 2 (n - 1) / n of the tensor, over beta (dialects/dfg/Sharding/
CostModel.cpp). First with the default network figures of --topology (50
GB/s, 8 us), then with alpha and beta fitted to these measurements (least
squares of the relative error), and the --topology that carries the fitted
figures into meshc plan.
"""
import argparse
import os
import re
import subprocess
import sys

import numpy as np

RANKS = 2
DEFAULT_GBPS, DEFAULT_US = 50.0, 8.0  # --topology's network-gbps, network-us


def predicted_us(nbytes, gbps, us):
    """The cost model's all_reduce over RANKS ranks between nodes."""
    ring = 2.0 * (RANKS - 1) / RANKS * nbytes
    return 2 * us + ring / (gbps * 1e9) * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--iterations", type=int, default=300)
    args = ap.parse_args()
    hosts = os.environ.get("MESHC_HOSTS_MPIRUN_ARGS")
    if not hosts:
        sys.exit("comm_wire.py: run it under scripts/netns_hosts.sh run 2 --")
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", *hosts.split(),
           "-np", str(RANKS), os.path.join(args.build, "bin", "meshc-bench-comm"),
           str(args.iterations)]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    if r.returncode:
        sys.exit(f"comm_wire.py: meshc-bench-comm failed:\n{r.stdout}{r.stderr}")
    sizes, measured = [], []
    for line in r.stdout.splitlines():
        m = re.match(r"\s*(\d+)\s+([\d.]+) /\s+[\d.]+\s+[\d.]+ /", line)
        if m:
            sizes.append(int(m.group(1)))
            measured.append(float(m.group(2)))
    if len(sizes) < 2:
        sys.exit(f"comm_wire.py: no timings in its output:\n{r.stdout}")
    # t = 2 alpha + ring / beta: linear in (2, ring). Least squares on the
    # relative error (each row divided by its measurement), so that the
    # small sizes, which fix alpha, weigh as much as the large ones.
    t = np.array(measured)
    ring = np.array([2.0 * (RANKS - 1) / RANKS * s for s in sizes])
    design = np.stack([np.full(len(sizes), 2.0), ring], axis=1) / t[:, None]
    (alpha_us, inv_beta), *_ = np.linalg.lstsq(design, np.ones(len(sizes)), rcond=None)
    alpha_us = max(alpha_us, 0.0)
    gbps = 1.0 / inv_beta / 1e3 if inv_beta > 0 else float("inf")  # us per byte -> GB/s
    print(f"all_reduce of f32 over {RANKS} ranks on two hosts (veth link, TCP), median of "
          f"{args.iterations} (us)")
    print(f"{'bytes':>10} {'measured':>10} {'default model':>14} {'fitted model':>13}")
    for s, t in zip(sizes, measured):
        print(f"{s:>10} {t:>10.1f} {predicted_us(s, DEFAULT_GBPS, DEFAULT_US):>14.1f} "
              f"{predicted_us(s, gbps, alpha_us):>13.1f}")
    print(f"fitted: alpha {alpha_us:.1f} us, beta {gbps:.2f} GB/s "
          f"(defaults: {DEFAULT_US:g} us, {DEFAULT_GBPS:g} GB/s)")
    print(f"calibrated plan: meshc plan MODEL --mesh M --topology nodes=N,gpus-per-node=G,"
          f"network-gbps={gbps:.2f},network-us={alpha_us:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
