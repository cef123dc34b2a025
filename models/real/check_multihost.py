#!/usr/bin/env python3
"""Runs corpus exports with their ranks on several hosts and checks that the
outputs are those of the same executables on one host.

Usage: scripts/netns_hosts.sh run 2 -- check_multihost.py --meshc build/bin/meshc
           --corpus models/real/corpus CASE...

CASE is EXPORT:MESH, e.g. gpt2-optimum:tp=2 or llama-optimum:pp=2xtp=2. The
hosts are those of scripts/netns_hosts.sh (MESHC_HOSTS_MPIRUN_ARGS), whose
slots (MESHC_HOSTS_SLOTS) mpirun fills in rank order: with 1 slot per host
each rank of a 2-rank mesh has a host of its own; with 2, a pp=2 x tp=2 mesh
keeps each tp pair inside a host and crosses hosts along pp, as `meshc plan
--topology` places them. Each export is compiled
without size flags and run with the inputs of its corpus folder, once on one
host and once across the hosts; every output must be identical. One line per
case: the hosts each rank ran on (from mpirun's --display-map), then `same
outputs` or the first difference; exit status 1 if any case failed.

--kill-rank R kills rank R after start-up instead (MESHC_FAULT_KILL_RANK,
which mpirun's -x passes to the remote hosts): meshc run must fail within
30 s, and mpirun must name the rank and the host it died on. --cut-link takes
the last host's link down while the step runs over and over: meshc run must
fail within 60 s of the cut, mpirun must name the host it lost, and a rank on
this side the collective it was waiting in and its peers. --hide
weights (or folder) makes the compiled folder's weights (or the whole folder)
missing on the last host (MESHC_HOSTS_HIDE, scripts/netns_rsh.sh): meshc run
must fail at start-up within 30 s, naming the host and the rank. --loss PCT
(and --delay-ms MS) impair the last host's link for the run across hosts:
the outputs must still be identical.
"""
import argparse
import glob
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


def run_command(meshc, folder, inputs, out, mpirun_args=None, extra=()):
    """`meshc run` of `folder` on the .npy `inputs`, writing to `out`."""
    cmd = [meshc, "run", folder, "--output-dir", out, "--threads", "1", *extra]
    for path in inputs:
        cmd += ["--input", f"{os.path.basename(path)[:-4]}={path}"]
    if mpirun_args:
        cmd += ["--mpirun-args", mpirun_args]
    return cmd


def run(meshc, folder, inputs, out, mpirun_args=None):
    return subprocess.run(run_command(meshc, folder, inputs, out, mpirun_args),
                          capture_output=True, text=True, timeout=600)


def compile_case(meshc, corpus, case, work):
    """Compiles the corpus export of CASE (EXPORT:MESH, axes joined by x)
    without size flags into `work`: (label, export folder, compiled folder,
    mesh, the compiler's first error or None)."""
    name, mesh = case.split(":")
    mesh = mesh.replace("x", ",")
    label = f"{name} [{mesh.replace(',', 'x')}]"
    folder = os.path.join(corpus, name)
    exe = os.path.join(work, f"{name}-{mesh.replace(',', '_').replace('=', '')}")
    c = subprocess.run([meshc, "compile", os.path.join(folder, "model.onnx"), "--mesh", mesh,
                        "-o", exe], capture_output=True, text=True)
    return label, folder, exe, mesh, first_error(c.stderr) if c.returncode else None


def compare_outputs(expected, actual):
    """`same outputs` when every .npy of folder `expected` is in `actual`,
    bit for bit; else the first that differs, and how."""
    for path in sorted(glob.glob(os.path.join(expected, "*.npy"))):
        other = os.path.join(actual, os.path.basename(path))
        a = np.load(path)
        b = np.load(other) if os.path.exists(other) else None
        if b is None or a.shape != b.shape or not np.array_equal(a, b):
            diff = "missing" if b is None else (
                f"shape {b.shape}" if a.shape != b.shape else
                f"largest difference {np.abs(a.astype(np.float64) - b).max():.2e}")
            return f"{os.path.basename(path)} differs ({diff})"
    return "same outputs"


def impair_link(host, loss, delay_ms):
    """Loses `loss` percent of the packets to and from `host` (hK of
    scripts/netns_hosts.sh) and delays them by `delay_ms`: tc netem on both
    ends of its link when a delay is asked for, else nftables rules in its
    namespace, which drop at random. Returns what it did, for the line."""
    prefix = os.environ["MESHC_HOSTS_PREFIX"]
    ns = f"{prefix}{host}"
    if delay_ms:
        netem = ["netem", "delay", f"{delay_ms:g}ms"] + (["loss", f"{loss:g}%"] if loss else [])
        veth = f"{prefix}v{host[1:]}"
        subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", "eth0",
                        "root", *netem], check=True)
        subprocess.run(["tc", "qdisc", "replace", "dev", veth, "root", *netem], check=True)
        return f"{loss:g}% loss and {delay_ms:g} ms delay on {host}'s link"
    nft = ["ip", "netns", "exec", ns, "nft"]
    subprocess.run([*nft, "delete", "table", "inet", "meshc"], capture_output=True)
    subprocess.run([*nft, "add", "table", "inet", "meshc"], check=True)
    for hook in ("input", "output"):
        subprocess.run([*nft, "add", "chain", "inet", "meshc", hook,
                        f"{{ type filter hook {hook} priority 0; }}"], check=True)
        subprocess.run([*nft, "add", "rule", "inet", "meshc", hook, "numgen", "random",
                        "mod", "1000", "<", str(round(loss * 10)), "counter", "drop"],
                       check=True)
    return f"{loss:g}% loss on {host}'s link"


def dropped_packets(host):
    """How many packets impair_link's rules or qdiscs dropped on `host`."""
    prefix = os.environ["MESHC_HOSTS_PREFIX"]
    ns = ["ip", "netns", "exec", f"{prefix}{host}"]
    text = subprocess.run([*ns, "nft", "list", "table", "inet", "meshc"],
                          capture_output=True, text=True).stdout
    text += subprocess.run([*ns, "tc", "-s", "qdisc", "show", "dev", "eth0"],
                           capture_output=True, text=True).stdout
    text += subprocess.run(["tc", "-s", "qdisc", "show", "dev", f"{prefix}v{host[1:]}"],
                           capture_output=True, text=True).stdout
    return (sum(int(n) for n in re.findall(r"counter packets (\d+)", text))
            + sum(int(n) for n in re.findall(r"netem.*\n.*dropped (\d+)", text)))


def hosts_count(mpirun_args):
    """The number of hosts in the hostfile of scripts/netns_hosts.sh's args."""
    hostfile = mpirun_args.split("--hostfile ")[1].split()[0]
    return sum(1 for line in open(hostfile) if line.strip())


def cut_link_once(args, exe, inputs, hosts, last, link):
    """Runs the job across the hosts, cuts the link to the last host while it
    steps, and returns ("ok: ...", output) when meshc run failed within 60 s
    of the cut with nothing left running on that host, mpirun naming the host
    it lost and a rank on this side the collective it was waiting in; else
    the reason and the output."""
    cmd = run_command(args.meshc, exe, inputs, exe + "-cut", hosts,
                      ["--repeat", "1000000", "--collective-timeout", "60"])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    time.sleep(8)  # started, and stepping
    subprocess.run(["ip", "link", "set", link, "down"], check=True)
    cut = time.monotonic()
    try:
        out, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    seconds = time.monotonic() - cut
    # The cut-off host's own rank and daemon must end too (its daemon loses
    # mpirun and stops what it started): nothing may be left running in its
    # namespace 30 s after the cut.
    ns = f"{os.environ['MESHC_HOSTS_PREFIX']}h{last}"
    while True:
        left = subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                              text=True).stdout.split()
        if not left or time.monotonic() - cut > 30:
            break
        time.sleep(1)
    if left:
        return f"still {len(left)} process(es) on h{last} 30 s after the cut", out
    host = re.search(r"Remote daemon: \S+ on node (\S+)", out)
    # The ranks left on this side, stopped by mpirun, name the collective
    # they were waiting in and its peers: a step's (shard.all_reduce #2 over
    # ranks {0, 1}) or, between the steps of --repeat, the agreement to start
    # or stop one (benchmark start|stop over all 2 ranks), whichever the cut
    # fell in.
    waiting = re.search(r"meshc: rank (\d+) on (\S+): stopped by the launcher "
                        r"\(SIGTERM\) after \d+ s waiting in (.+?)(?: #\d+)? (over [^;]*);",
                        out)
    if proc.returncode and host and waiting and seconds < 60:
        return (f"ok: meshc run failed (status {proc.returncode}) within 60 s, nothing left "
                f"on h{last}, naming {host.group(1)}; rank {waiting.group(1)} on "
                f"{waiting.group(2)} was waiting in {waiting.group(3)} {waiting.group(4)}"), out
    return f"status {proc.returncode} after {seconds:.0f} s: {first_error(out)}", out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--meshc", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--kill-rank", type=int, default=-1,
                    help="instead of comparing outputs, kill this rank after start-up "
                         "(MESHC_FAULT_KILL_RANK, passed to the remote hosts with -x) and "
                         "check that meshc run fails naming its rank and host")
    ap.add_argument("--cut-link", action="store_true",
                    help="instead of comparing outputs, run the step over and over and take "
                         "the last host's link down mid-run (ip link set ... down): meshc run "
                         "must fail within 60 s of the cut, naming that host")
    ap.add_argument("--hide", choices=["weights", "folder"],
                    help="instead of comparing outputs, make the compiled folder's weights/ "
                         "(or the whole folder, executables included) missing on the last "
                         "host: meshc run must fail at start-up within 30 s, naming the "
                         "host and the rank")
    ap.add_argument("--loss", type=float, default=0,
                    help="drop this percentage of the packets to and from the last host "
                         "during the run across hosts (tc netem with --delay-ms, else "
                         "nftables); the outputs must still be identical")
    ap.add_argument("--delay-ms", type=float, default=0,
                    help="delay the packets to and from the last host by this much (tc "
                         "netem, which the kernel must have)")
    ap.add_argument("cases", nargs="+")
    args = ap.parse_args()
    hosts = os.environ.get("MESHC_HOSTS_MPIRUN_ARGS")
    if not hosts:
        sys.exit("check_multihost.py: run it under scripts/netns_hosts.sh")

    with tempfile.TemporaryDirectory(prefix="meshc-multihost-") as work:
        return check(args, work)


def check(args, work):
    """Runs every case of `args` in the folder `work`; the exit status."""
    hosts = os.environ["MESHC_HOSTS_MPIRUN_ARGS"]
    failed = 0
    for case in args.cases:
        label, folder, exe, mesh, error = compile_case(args.meshc, args.corpus, case, work)
        if error:
            print(f"{label}: {error}")
            failed += 1
            continue
        ranks = 1
        for axis in mesh.split(","):
            ranks *= int(axis.split("=")[1])
        inputs = sorted(glob.glob(os.path.join(folder, "inputs", "*.npy")))
        if args.kill_rank >= 0:
            os.environ["MESHC_FAULT_KILL_RANK"] = str(args.kill_rank)
            start = time.monotonic()
            r = run(args.meshc, exe, inputs, exe + "-killed",
                    f"-x MESHC_FAULT_KILL_RANK {hosts}")
            seconds = time.monotonic() - start
            del os.environ["MESHC_FAULT_KILL_RANK"]
            m = re.search(r"process rank (\d+) with PID \d+ on node (\S+) exited on signal",
                          r.stdout + r.stderr)
            if r.returncode == 0 or not m:
                print(f"{label}: rank {args.kill_rank} killed: not reported "
                      f"(status {r.returncode}): {first_error(r.stderr + r.stdout)}")
                failed += 1
            elif seconds >= 30:
                print(f"{label}: rank {m.group(1)} killed on {m.group(2)}: meshc run took "
                      f"{seconds:.0f} s to fail")
                failed += 1
            else:
                print(f"{label}: rank {m.group(1)} killed on {m.group(2)}: meshc run failed "
                      f"(status {r.returncode}) within 30 s")
            continue
        if args.hide:
            last = f"h{hosts_count(hosts)}"
            hidden = exe if args.hide == "folder" else os.path.join(exe, "weights")
            start = time.monotonic()
            r = subprocess.run(run_command(args.meshc, exe, inputs, exe + "-hidden", hosts),
                               capture_output=True, text=True, timeout=600,
                               env={**os.environ, "MESHC_HOSTS_HIDE": f"{last}:{hidden}"})
            seconds = time.monotonic() - start
            out = r.stdout + r.stderr
            # The rank names itself and its host; mpirun names the node and the
            # rank it could not start.
            m = (re.search(r"meshc: rank (\d+) on (\S+): error: (cannot open weight file)", out)
                 or re.search(r"Node: (\S+)\s+while attempting to start process rank (\d+)",
                              out))
            if m and m.re.groups == 2:
                rank, host, what = m.group(2), m.group(1), "cannot start its executable"
            elif m:
                rank, host, what = m.group(1), m.group(2), m.group(3)
            if r.returncode == 0 or not m or seconds >= 30:
                print(f"{label}: {args.hide} missing on {last}: status {r.returncode} after "
                      f"{seconds:.0f} s: {first_error(out)}")
                failed += 1
            else:
                print(f"{label}: {args.hide} missing on {last}: meshc run failed (status "
                      f"{r.returncode}) within 30 s: rank {rank} on {host}: {what}")
            continue
        if args.cut_link:
            last = hosts_count(hosts)
            link = f"{os.environ['MESHC_HOSTS_PREFIX']}v{last}"
            verdict, out = cut_link_once(args, exe, inputs, hosts, last, link)
            if verdict.startswith("ok"):
                print(f"{label}: link to h{last} cut: {verdict[4:]}")
            else:
                sys.stderr.write(f"{label}: {out}\n")
                print(f"{label}: link to h{last} cut: {verdict}")
                failed += 1
            continue
        single = run(args.meshc, exe, inputs, exe + "-one")
        impaired = ""
        if args.loss or args.delay_ms:
            impaired = ", " + impair_link(f"h{hosts_count(hosts)}", args.loss, args.delay_ms)
        spread = run(args.meshc, exe, inputs, exe + "-hosts", f"--display-map {hosts}")
        if impaired and spread.returncode:
            # Once in a CI run under load (of some 60 here), a run across the
            # lossy link failed; what it printed goes to stderr, where lit
            # shows it, and the line says that a second try was needed.
            sys.stderr.write(f"{label}: first try across the impaired link failed:\n"
                             f"{spread.stdout}{spread.stderr}\n")
            spread = run(args.meshc, exe, inputs, exe + "-hosts", f"--display-map {hosts}")
            impaired += " (second try)"
        if impaired:
            impaired += f" ({dropped_packets(f'h{hosts_count(hosts)}')} packets dropped)"
        if single.returncode or spread.returncode:
            bad = single if single.returncode else spread
            # All of it to stderr (lit shows it on failure); the line names
            # the first error.
            sys.stderr.write(f"{label}: {bad.stdout}{bad.stderr}\n")
            print(f"{label}: meshc run failed{' across hosts' if bad is spread else ''}: "
                  f"{first_error(bad.stderr + bad.stdout)}")
            failed += 1
            continue
        # mpirun's map: "Data for node: h1 ..." then the ranks it runs.
        where, node = {}, None
        for line in (spread.stdout + spread.stderr).splitlines():
            m = re.search(r"Data for node: (\S+)", line)
            if m:
                node = m.group(1)
            m = re.search(r"Process rank: (\d+)", line)
            if m and node:
                where[int(m.group(1))] = node
        placed = " ".join(f"{r}@{where.get(r, '?')}" for r in range(ranks))
        if len(set(where.values())) < 2:
            print(f"{label}: ranks {placed}: not spread over the hosts")
            failed += 1
            continue
        verdict = compare_outputs(exe + "-one", exe + "-hosts")
        failed += verdict != "same outputs"
        print(f"{label}: ranks {placed}{impaired}: {verdict}")
    print(f"multihost: {len(args.cases)} cases; failed: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
