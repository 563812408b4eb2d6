# lit configuration for TGC: tg-opt, tgc and friends with FileCheck.
import os
import shutil
import lit.formats
from lit.llvm import llvm_config

config.name = "TG"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".tg", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tg_obj_root)
config.environment["FILECHECK_OPTS"] = "--enable-var-scope --dump-input=fail"

config.substitutions.append(("%tg_src", config.tg_src_root))
config.substitutions.append(("%examples", os.path.join(config.tg_src_root, "examples")))

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.tg_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# Optional tools: tests that need them say `REQUIRES: ptxas` etc.
ptxas = os.path.join(config.cuda_home, "bin", "ptxas")
if os.access(ptxas, os.X_OK):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
# `make test-asan` runs lit with --param sanitized=1: tests too slow under
# ASan say `UNSUPPORTED: sanitized`.
if lit_config.params.get("sanitized"):
    config.available_features.add("sanitized")
# tg-run --device cuda without a GPU: a libcuda that runs kernels on the PTX
# emulator (test/nvptx/FakeCudaEmu.cpp), loaded through TG_CUDA_LIBRARY.
fake_cuda = os.path.join(config.tg_tools_dir, "..", "lib", "libtg_fake_cuda_emu.so")
if os.path.exists(fake_cuda):
    config.available_features.add("fake-cuda")
    config.substitutions.append(("%fake_cuda", os.path.abspath(fake_cuda)))
# Its NCCL: collectives over MPI on that driver's memory (test/nvptx/FakeNccl.cpp).
fake_nccl = os.path.join(config.tg_tools_dir, "..", "lib", "libtg_fake_nccl.so")
if os.path.exists(fake_nccl):
    config.available_features.add("fake-nccl")
    config.substitutions.append(("%fake_nccl", os.path.abspath(fake_nccl)))
config.substitutions.append(("%tg_bin", config.tg_tools_dir))
# A Python with PyTorch (Debian's python3-torch), for the scripts that run a
# PyTorch peer: tests that need it say `REQUIRES: torch`.
import subprocess
torch_python = "python3"  # without PyTorch: scripts skip their peer
for py in ["/usr/bin/python3", shutil.which("python3") or ""]:
    if py and subprocess.run([py, "-c", "import torch"], capture_output=True).returncode == 0:
        config.available_features.add("torch")
        torch_python = py
        break
config.substitutions.append(("%torch_python", torch_python))
for tool in ["tgc", "tg-run", "tg-bench-gemm"]:
    if os.path.exists(os.path.join(config.tg_tools_dir, tool)):
        config.available_features.add(tool)
# Data-parallel tests run ranks with Debian's Open MPI (docs/data-parallel.md):
# as root (CI containers) and more ranks than cores (2-core machines).
import shutil
if shutil.which("mpirun"):
    config.available_features.add("mpirun")
    # Under the sanitizers, ranks keep ASan and UBSan but not LeakSanitizer:
    # Open MPI's components leave their allocations to process exit (leaks
    # in libmpi and in dlopened MCA modules, reported from MPI_Init), which
    # is not our code to fix. Single-process tg-run stays leak-checked.
    leak = ("ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:allow_user_poisoning=0 "
            if lit_config.params.get("sanitized") else "")
    config.substitutions.append(
        ("%mpirun", "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
         "OMPI_MCA_btl_vader_single_copy_mechanism=none " + leak +
         "timeout 300 mpirun --allow-run-as-root --oversubscribe" +
         (" -x ASAN_OPTIONS" if leak else "")))
