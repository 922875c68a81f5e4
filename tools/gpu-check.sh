#!/usr/bin/env bash
# One script for a machine with a GPU (under 8 minutes on an H200-class
# machine): builds the CUDA plugin for this machine's GPU only (and Vulkan),
# runs the per-op conformance suite on every device, the GPU and Vulkan
# end-to-end tests (the GPU's again with graphs off, so a failure points at
# capture or at a kernel), the NCCL/RCCL communicator cases across every
# GPU, then `tessera bench` on the GPU (concurrency 1
# and 64, and the operator benchmarks: GEMVs against the copy bandwidth,
# GEMMs and attention against the matrix rate) and on the CPU, and prints
# a short table last. Writes its logs under $OUT
# (or ./gpu-check-out).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check-out}
mkdir -p "$out"
step() { echo "== $*"; }
started=$(date +%s)

# The GPU's arch, so that nvcc builds one target instead of four ("9.0" -> "90-real").
cuda_arch=""
if command -v nvidia-smi >/dev/null 2>&1; then
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
  [ -n "$cap" ] && cuda_arch="-DTESSERA_CUDA_ARCHITECTURES=${cap}-real"
fi

step "build ${cuda_arch:-(all CUDA targets)}"
build_start=$(date +%s)
if ! { cmake --preset default $cuda_arch >"$out/configure.log" 2>&1 && cmake --build --preset default -j "$(nproc)" >"$out/build.log" 2>&1; }; then
  tail -n 30 "$out/configure.log" "$out/build.log"; exit 1
fi
echo "built in $(( $(date +%s) - build_start )) s"
grep "tessera:" "$out/configure.log"

step "devices"
build/bin/tessera devices | tee "$out/devices.txt"
gpu=""
for b in cuda rocm; do grep -q "^$b:0" "$out/devices.txt" && { gpu=$b; break; }; done
[ -n "$gpu" ] || echo "no CUDA or ROCm device: the GPU steps below are skipped"

step "conformance (every op on every device)"
timeout 240 build/tests/tessera_conformance_tests -tc="*every device*" >"$out/conformance.txt" 2>&1
conf=$?
grep -E "testing|does not|no device|test cases|Status" "$out/conformance.txt"

step "gpu and vulkan end to end"
(cd build && timeout 240 ctest -R "^(gpu|vulkan)" --output-on-failure) >"$out/e2e.txt" 2>&1
e2e=$?
grep -E "tests passed|Failed|\*\*\*" "$out/e2e.txt" | tail -n 20
if [ -n "$gpu" ]; then
  step "gpu end to end, graphs off (TESSERA_GPU_GRAPHS=0)"
  (cd build && TESSERA_GPU_GRAPHS=0 timeout 120 ctest -R "^gpu" --output-on-failure) >"$out/e2e-nographs.txt" 2>&1
  grep -E "tests passed|Failed|\*\*\*" "$out/e2e-nographs.txt" | tail -n 10
fi

# NCCL/RCCL across every GPU (one rank per thread; tests/gpu/gpu_communicator_test.cpp):
# with one GPU only the one-rank case runs, without NCCL or RCCL none (each says why).
step "communicators ($(nvidia-smi -L 2>/dev/null | grep -c '^GPU') NVIDIA GPUs)"
NCCL_DEBUG=WARN timeout 180 build/tests/tessera_gpu_tests -tc="*NCCL*,*RCCL*" >"$out/communicators.txt" 2>&1
comm=$?
grep -E "skipping the (cuda|rocm) (nccl|rccl)|ERROR|NCCL WARN|test cases|Status" "$out/communicators.txt" | head -n 20

step "bench"
benches=()
if [ -n "$gpu" ]; then
  timeout 120 build/bin/tessera bench --backend "$gpu" --json >"$out/bench-$gpu.json" 2>"$out/bench-$gpu.err"
  timeout 120 build/bin/tessera bench --backend "$gpu" --concurrency 64 --json >"$out/bench-$gpu-c64.json" 2>"$out/bench-$gpu-c64.err"
  benches+=("$gpu" "$gpu-c64")
  for op in matmul attention; do
    timeout 120 build/bin/tessera bench --backend "$gpu" --op $op >"$out/ops-$op.txt" 2>&1
  done
fi
timeout 90 build/bin/tessera bench --backend cpu --json >"$out/bench-cpu.json" 2>"$out/bench-cpu.err"
benches+=(cpu)

step "summary ($(( $(date +%s) - started )) s)"
for op in matmul attention; do [ -f "$out/ops-$op.txt" ] && cat "$out/ops-$op.txt"; done
python3 - "$out" "$conf" "$e2e" "$comm" "${benches[@]}" <<'PY'
import json, sys, os
out, conf, e2e, comm, benches = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
print(f"conformance: {'pass' if conf == '0' else 'FAIL'}   gpu/vulkan e2e: {'pass' if e2e == '0' else 'FAIL'}   "
      f"communicators: {'pass' if comm == '0' else 'FAIL'}")
for b in benches:
    p = os.path.join(out, f"bench-{b}.json")
    try:
        j = json.load(open(p))
        for d in j.get("devices", [j]):
            keys = ("device", "weight_type", "concurrency", "prefill_tok_s", "decode_tok_s", "aggregate_decode_tok_s",
                    "ttft_ms", "tpot_ms", "read_GBps", "mbu")
            shown = {k: d[k] for k in keys if k in d}
            print(f"{b:10} " + "  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in shown.items()))
    except Exception:
        print(f"{b:10} bench failed: {open(os.path.join(out, f'bench-{b}.err')).read().strip()[-300:]}")
PY
[ "$conf" = 0 ] && [ "$e2e" = 0 ] && [ "$comm" = 0 ]
