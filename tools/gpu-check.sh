#!/usr/bin/env bash
# One script for a machine with a GPU (under 8 minutes): builds with the
# Vulkan plugin, runs the per-op conformance suite on every device (the
# GPU's Vulkan driver included) and the Vulkan end-to-end tests, then
# `tessera bench --backend vulkan` and `--backend cpu`, and prints a short
# table last. Writes its logs under $OUT (or ./gpu-check-out).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check-out}
mkdir -p "$out"
step() { echo "== $*"; }

step "build"
if ! { cmake --preset default >"$out/configure.log" 2>&1 && cmake --build --preset default -j "$(nproc)" >"$out/build.log" 2>&1; }; then
  tail -n 30 "$out/configure.log" "$out/build.log"; exit 1
fi
ls build/bin/libtessera-backend-vulkan.so >/dev/null 2>&1 || { echo "the Vulkan plugin did not build (see $out/configure.log)"; exit 1; }

step "devices"
build/bin/tessera devices | tee "$out/devices.txt"

step "conformance (every op on every device)"
timeout 240 build/tests/tessera_conformance_tests -tc="*every device*" >"$out/conformance.txt" 2>&1
conf=$?
grep -E "testing|does not run|test cases|Status" "$out/conformance.txt"

step "vulkan end to end"
(cd build && timeout 240 ctest -R -i vulkan --output-on-failure) >"$out/vulkan-e2e.txt" 2>&1
e2e=$?
tail -n 5 "$out/vulkan-e2e.txt"

step "bench"
timeout 180 build/bin/tessera bench --backend vulkan --json >"$out/bench-vulkan.json" 2>"$out/bench-vulkan.err"
timeout 120 build/bin/tessera bench --backend cpu --json >"$out/bench-cpu.json" 2>"$out/bench-cpu.err"

step "summary"
python3 - "$out" "$conf" "$e2e" <<'PY'
import json, sys, os
out, conf, e2e = sys.argv[1], sys.argv[2], sys.argv[3]
print(f"conformance: {'pass' if conf == '0' else 'FAIL'}   vulkan e2e: {'pass' if e2e == '0' else 'FAIL'}")
print(f"{'backend':8} {'device':40} {'prefill tok/s':>13} {'decode tok/s':>12} {'TTFT ms':>9} {'TPOT ms':>9} {'GB/s':>7} {'MBU':>6}")
for b in ("vulkan", "cpu"):
    p = os.path.join(out, f"bench-{b}.json")
    try:
        for d in json.load(open(p))["devices"]:
            print(f"{b:8} {d['device'][:40]:40} {d['prefill_tok_s']:13.1f} {d['decode_tok_s']:12.2f} {d['ttft_ms']:9.1f} "
                  f"{d['tpot_ms']:9.2f} {d['read_GBps']:7.1f} {100*d['mbu']:5.1f}%")
    except Exception as e:
        print(f"{b:8} bench failed: {open(os.path.join(out, f'bench-{b}.err')).read().strip()[-200:]}")
PY
[ "$conf" = 0 ] && [ "$e2e" = 0 ]
