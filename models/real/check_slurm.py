#!/usr/bin/env python3
"""Runs corpus exports under Slurm and checks that the outputs are those of
the same executables under mpirun.

Usage: scripts/slurm_local.sh run -- check_slurm.py --meshc build/bin/meshc
           --corpus models/real/corpus CASE...

CASE is EXPORT:MESH, e.g. gpt2-optimum:tp=2 or llama-optimum:pp=2xtp=2. Each
export is compiled without size flags and run with the inputs of its corpus
folder three ways: `meshc run` (mpirun), `meshc run --launcher srun` (into
an output folder whose name holds a space, a quote and srun's `%t`, which
must reach the ranks as they are) and `srun -n N --mpi=pmix --multi-prog
ranks.conf` with the file written from the manifest as docs/user-guide.md
tells a user to. Every output must be identical to
mpirun's. One line per case; exit status 1 if any case failed.

--generate N instead runs `meshc generate` of the corpus prompt (its
input_ids) for N new tokens under mpirun and under srun: the ids must be
identical. --kill-rank R kills rank R after start-up (MESHC_FAULT_KILL_RANK,
which srun passes on with the environment): `meshc run --launcher srun` must
fail within 30 s, and srun must name the task that died.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_corpus import first_error  # noqa: E402
from check_multihost import compare_outputs, compile_case, run_command  # noqa: E402


def multi_prog(folder, inputs, out):
    """srun's --multi-prog file for the compiled `folder`, one line per rank:
    the rank, its role's executable (from the manifest) and its arguments."""
    manifest = json.load(open(os.path.join(folder, "manifest.json")))
    executable = {role["name"]: os.path.abspath(os.path.join(folder, role["executable"]))
                  for role in manifest["roles"]}
    args = ["--manifest", os.path.abspath(os.path.join(folder, "manifest.json")),
            "--output-dir", out, "--threads", "1"]
    for path in inputs:
        args += ["--input", f"{os.path.basename(path)[:-4]}={path}"]
    return "".join(f"{r} {executable[rank['role']]} {' '.join(args)}\n"
                   for r, rank in enumerate(manifest["ranks"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--meshc", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--generate", type=int, default=0,
                    help="instead of one step, generate this many tokens from the corpus "
                         "prompt under mpirun and under srun; the ids must be identical")
    ap.add_argument("--kill-rank", type=int, default=-1,
                    help="instead of comparing outputs, kill this rank after start-up: "
                         "meshc run --launcher srun must fail within 30 s, naming it")
    ap.add_argument("cases", nargs="+")
    args = ap.parse_args()
    if not os.environ.get("SLURM_CONF"):
        sys.exit("check_slurm.py: run it under scripts/slurm_local.sh")

    with tempfile.TemporaryDirectory(prefix="meshc-slurm-") as work:
        return check(args, work)


def check(args, work):
    """Runs every case of `args` in the folder `work`; the exit status."""
    failed = 0
    for case in args.cases:
        label, folder, exe, mesh, error = compile_case(args.meshc, args.corpus, case, work)
        if error:
            print(f"{label}: {error}")
            failed += 1
            continue
        inputs = sorted(glob.glob(os.path.join(folder, "inputs", "*.npy")))

        if args.kill_rank >= 0:
            start = time.monotonic()
            r = subprocess.run(run_command(args.meshc, exe, inputs, exe + "-killed",
                                           extra=["--launcher", "srun"]),
                               capture_output=True, text=True, timeout=600,
                               env={**os.environ,
                                    "MESHC_FAULT_KILL_RANK": str(args.kill_rank)})
            seconds = time.monotonic() - start
            m = re.search(r"srun: error: \S+: task (\d+): Killed", r.stdout + r.stderr)
            if r.returncode == 0 or not m or int(m.group(1)) != args.kill_rank:
                print(f"{label}: rank {args.kill_rank} killed: not reported "
                      f"(status {r.returncode}): {first_error(r.stderr + r.stdout)}")
                failed += 1
            else:
                print(f"{label}: rank {m.group(1)} killed: meshc run --launcher srun failed "
                      f"(status {r.returncode}) "
                      + ("within 30 s" if seconds < 30 else f"after {seconds:.0f} s"))
                failed += seconds >= 30
            continue

        if args.generate:
            ids = {}
            for launcher in ("mpirun", "srun"):
                out = f"{exe}-{launcher}.npy"
                r = subprocess.run(
                    [args.meshc, "generate", exe, "--prompt-ids",
                     os.path.join(folder, "inputs", "input_ids.npy"), "--max-new-tokens",
                     str(args.generate), "--ignore-eos", "--output-ids", out, "--threads",
                     "1", "--launcher", launcher], capture_output=True, text=True, timeout=600)
                if r.returncode:
                    ids[launcher] = f"failed: {first_error(r.stderr + r.stdout)}"
                else:
                    ids[launcher] = np.load(out)
            if any(isinstance(v, str) for v in ids.values()):
                bad = "mpirun" if isinstance(ids["mpirun"], str) else "srun"
                print(f"{label}: generate under {bad} {ids[bad]}")
                failed += 1
            elif np.array_equal(ids["mpirun"], ids["srun"]):
                print(f"{label}: generate under srun: same {ids['srun'].shape[1]} ids")
            else:
                print(f"{label}: generate under srun: ids differ "
                      f"({ids['mpirun'].tolist()} vs {ids['srun'].tolist()})")
                failed += 1
            continue

        runs = {}
        runs["mpirun"] = subprocess.run(run_command(args.meshc, exe, inputs, exe + "-mpirun"),
                                        capture_output=True, text=True, timeout=600)
        # An output folder whose name has a space, a quote and srun's %t:
        # meshc passes every argument to the tasks as it is.
        srun_out = exe + "-srun out %t 'q'"
        runs["meshc run --launcher srun"] = subprocess.run(
            run_command(args.meshc, exe, inputs, srun_out, extra=["--launcher", "srun"]),
            capture_output=True, text=True, timeout=600)
        conf = exe + "-ranks.conf"
        os.makedirs(exe + "-multiprog", exist_ok=True)
        with open(conf, "w") as f:
            f.write(multi_prog(exe, inputs, exe + "-multiprog"))
        world = json.load(open(os.path.join(exe, "manifest.json")))["world_size"]
        runs["srun --multi-prog"] = subprocess.run(
            ["srun", "-n", str(world), "--mpi=pmix", "--multi-prog", conf],
            capture_output=True, text=True, timeout=600)
        bad = [how for how, r in runs.items() if r.returncode]
        if bad:
            r = runs[bad[0]]
            print(f"{label}: {bad[0]} failed: {first_error(r.stderr + r.stdout)}")
            failed += 1
            continue
        verdicts = [compare_outputs(exe + "-mpirun", out)
                    for out in (srun_out, exe + "-multiprog")]
        if verdicts == ["same outputs"] * 2:
            print(f"{label}: {world} tasks under srun, both ways: same outputs as mpirun")
        else:
            print(f"{label}: meshc run --launcher srun: {verdicts[0]}; "
                  f"srun --multi-prog: {verdicts[1]}")
            failed += 1
    print(f"slurm: {len(args.cases)} cases; failed: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
