# -*- Python -*-
# lit configuration of meshc's FileCheck suites.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "MESHC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.meshc_obj_root, "test")
config.excludes = ["Inputs", "CMakeLists.txt", "unit", "lit.cfg.py"]

# Captures must be re-bound in each CHECK-LABEL block (STYLE.md).
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

config.substitutions.append(("%meshc_src", config.meshc_src_root))
config.substitutions.append(("%meshc_bin", config.meshc_tools_dir))
# A user's own mpirun, as the README shows it (root and oversubscription
# allowed: CI runs as root on 2 cores).
config.substitutions.append(("%mpirun", "mpirun --allow-run-as-root --oversubscribe"))

# Tests that write ONNX models need the bootstrap environment; without it they
# would fail confusingly, so stop here with the remedy.
import subprocess

try:
    subprocess.run([config.meshc_python, "-c", "import onnx, numpy"], check=True,
                   capture_output=True)
except (OSError, subprocess.CalledProcessError):
    lit_config.fatal(f"{config.meshc_python} cannot import onnx/numpy; run "
                     "scripts/bootstrap.sh (or `make test`, which runs it)")
config.substitutions.append(("%meshc_python", config.meshc_python))
try:
    subprocess.run([config.meshc_genai_python, "-c", "import onnxruntime_genai"],
                   check=True, capture_output=True)
except (OSError, subprocess.CalledProcessError):
    lit_config.fatal(f"{config.meshc_genai_python} cannot import onnxruntime_genai; run "
                     "scripts/bootstrap.sh (or `make test`, which runs it)")
config.substitutions.append(("%genai_python", config.meshc_genai_python))
llvm_config.add_tool_substitutions(
    ["meshc", "meshc-opt", "meshc-eval"], [config.meshc_tools_dir]
)

# The cuda target: `cuda-toolkit` when this meshc was built with nvcc,
# cuBLASLt and NCCL (then `make test` builds cuda executables); `cuda-gpu`
# when a GPU is usable here too (then they run: `REQUIRES: cuda-gpu`).
if config.meshc_cuda:
    config.available_features.add("cuda-toolkit")
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                                text=True, timeout=60)
        if listed.returncode == 0 and "GPU" in listed.stdout:
            config.available_features.add("cuda-gpu")
    except (OSError, subprocess.SubprocessError):
        pass

# Several hosts on this machine (scripts/netns_hosts.sh): network namespaces
# need root (or CAP_NET_ADMIN) and iproute2; without them the multi-host
# tests are unsupported (`REQUIRES: netns`), and lit says so.
import os
import shutil

if shutil.which("ip") and shutil.which("unshare"):
    probe = f"meshc-probe-{os.getpid()}"
    if subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode == 0:
        # tc netem (delay and loss on a link): a qdisc the kernel may lack.
        if subprocess.run(["ip", "netns", "exec", probe, "tc", "qdisc", "add", "dev", "lo",
                           "root", "netem", "delay", "1ms"],
                          capture_output=True).returncode == 0:
            config.available_features.add("netem")
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
        config.available_features.add("netns")
        if not shutil.which("nft"):
            lit_config.fatal("nftables is not installed (the multi-host test's packet loss); "
                             "run scripts/bootstrap.sh")

# A Slurm cluster of this machine (scripts/slurm_local.sh): slurmctld and
# slurmd run jobs as their user, so they need root; without it the Slurm tests
# are unsupported (`REQUIRES: slurm`). As root the daemons must be there
# (scripts/bootstrap.sh installs them), or the suite stops saying so.
if os.geteuid() == 0:
    missing = [t for t in ("munged", "slurmctld", "slurmd", "srun", "sinfo")
               if not shutil.which(t)]
    if missing:
        lit_config.fatal(f"Slurm is not installed ({', '.join(missing)} missing); "
                         "run scripts/bootstrap.sh")
    config.available_features.add("slurm")
