#!/usr/bin/env bash
# The README's two commands on a fresh Debian 12 machine:
#   tools/quickstart.sh bench   install what is missing, build, run `tessera bench`
#   tools/quickstart.sh test    install what is missing, build, run every test
#                               (Release, with the aarch64 cross build under
#                               qemu among them, then the ASan+UBSan preset,
#                               then the engine's tests under ThreadSanitizer)
# Idempotent: quiet when nothing needs doing; build logs go to build*/quickstart.log
# and are printed only on failure.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
case "$mode" in bench|test) ;; *) echo "usage: tools/quickstart.sh bench|test [bench flags...]" >&2; exit 2 ;; esac
shift || true

# ocl-icd-opencl-dev: only recommended by libdnnl-dev, but its CMake config requires OpenCL.
# libvulkan-dev glslc: the Vulkan plugin and its shaders; mesa-vulkan-drivers: lavapipe, the
# CPU Vulkan driver the Vulkan tests run on where there is no GPU.
# libcpp-httplib-dev: the CLI's HTTP server and bench serve's client; curl: the server tests
# check the raw SSE framing with it. libopenmpi-dev openmpi-bin: tensor parallelism across
# processes and hosts (`mpirun -np N tessera ... --tensor-parallel N`). libucx-dev:
# prefill/decode disaggregation moves KV blocks over UCX (libucx0, its runtime, comes with it).
packages=(g++ cmake ninja-build pkg-config libdnnl-dev ocl-icd-opencl-dev doctest-dev nlohmann-json3-dev libcli11-dev
          libvulkan-dev glslc mesa-vulkan-drivers libcpp-httplib-dev curl
          libopenmpi-dev openmpi-bin libucx-dev)
# Node.js runs the independent test oracles (npm packages); any node/npm on PATH will do.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
# Python's jinja2 is the chat-template tests' oracle (../shared/tools/render_chat_template.py); tests only.
[ "$mode" = test ] && packages+=(python3-jinja2)
# clang and its libFuzzer runtime: the server's request parser is fuzzed in the tests (tests/fuzz).
[ "$mode" = test ] && packages+=(clang-14 libclang-rt-14-dev)
# hipcc and the HIP runtime: the tests build the ROCm backend plugin (its GPU tests skip without an
# AMD GPU). The CUDA plugin is built wherever NVIDIA's toolkit is (/usr/local/cuda, or nvcc on PATH):
# Debian 12's own (11.8, non-free) is older than the one the CI machines carry, so none is installed here.
[ "$mode" = test ] && packages+=(hipcc libamdhip64-dev)
# The edge build: the tests cross-compile the CPU backend and its suites for aarch64
# (toolchains/aarch64-linux-gnu.cmake, through ccache) and run them under qemu-aarch64 (tests/arm64).
[ "$mode" = test ] && packages+=(g++-aarch64-linux-gnu qemu-user ccache)

install_missing() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "quickstart: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >/dev/null
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Without an NVIDIA GPU the test build can only prove that the CUDA plugin
# compiles: its device code for sm_90 alone instead of the 4 targets
# cmake/gpu_backends.cmake lists. sm_90 compiles every branch the others do
# (kernels/cuda branches only at __CUDA_ARCH__ 800, and all 4 are past it);
# minutes less on two cores. With a GPU there (or for bench), every target,
# so the GPU tests run on whatever card the machine has. ROCm keeps its 3
# (gfx908, gfx90a and gfx1030 each take other MFMA/bf16 branches).
gpu_targets=()
if [ "$mode" = test ] && [ ! -e /dev/nvidia0 ]; then
  gpu_targets+=(-DTESSERA_CUDA_ARCHITECTURES=90-real)
fi

# build PRESET DIR: configure once, then build; the log is shown only if it fails.
build() {
  local preset=$1 dir=$2
  mkdir -p "$dir"
  local log="$dir/quickstart.log"
  if [ ! -f "$dir/build.ninja" ]; then
    local extra=()
    [ "$preset" = default ] && extra=("${gpu_targets[@]}")
    cmake --preset "$preset" "${extra[@]}" >"$log" 2>&1 || { cat "$log"; exit 1; }
  fi
  cmake --build --preset "$preset" -j "$(nproc)" >"$log" 2>&1 || { cat "$log"; exit 1; }
}

# The npm packages the tests compare against (tests/oracle/package-lock.json),
# installed only when node_modules is missing or the lock changed since.
install_oracles() {
  command -v npm >/dev/null 2>&1 || return 0
  local dir=tests/oracle stamp=tests/oracle/node_modules/.tessera-lock
  local want; want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && return 0
  local log; log=$(mktemp)
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >"$log" 2>&1 || { cat "$log"; rm -f "$log"; exit 1; }
  rm -f "$log"
  echo "$want" >"$stamp"
}

# timed NAME CMD...: runs CMD and records how long it took; the record is
# printed when the script ends, failed or not, so a slow CI run shows where
# its time went.
timings=() current="" current_start=0
timed() {
  current=$1 current_start=$(date +%s); shift
  "$@"
  timings+=("$current $(($(date +%s) - current_start)) s") current=""
}
print_timings() {
  [ -n "$current" ] && timings+=("$current $(($(date +%s) - current_start)) s (ended there)")
  [ ${#timings[@]} -gt 0 ] && printf 'quickstart: time taken: %s\n' "$(IFS=';'; echo "${timings[*]}" | sed 's/;/; /g')"
  return 0
}
trap print_timings EXIT

timed install install_missing
timed build build default build

if [ "$mode" = bench ]; then
  exec build/bin/tessera bench "$@"
fi

# The first run's output of each failed test (its command and last 80
# lines) from CTest's log in build dir $1, printed before the rerun
# overwrites that log: a test that fails only under load and passes again
# would otherwise leave nothing to diagnose.
print_failed_output() {
  local log=$1/Testing/Temporary/LastTest.log
  [ -f "$log" ] || return 0
  echo "quickstart: the failed tests' output from that run:"
  awk 'function flush(  i, from) {
         if (!failed) return
         for (i = 1; i <= 3 && i <= n; ++i) print lines[i]
         from = n - 80 > 3 ? n - 80 : 4
         if (from > 4) print "[...]"
         for (i = from; i <= n; ++i) print lines[i]
       }
       /^[0-9]+\/[0-9]+ Testing: / { flush(); n = 0; failed = 0 }
       { lines[++n] = $0 }
       /^Test Failed\./ { failed = 1 }
       END { flush() }' "$log" | tail -n 400
}

# run_tests PRESET TIMEOUT DIR: the summary, and on failure the failed
# tests' output from that run (DIR: the preset's build dir) and again from a
# rerun (so a test that passes the second time shows itself as flaky; the
# first failure still fails the command).
run_tests() {
  local preset=$1 timeout=$2 dir=$3
  # `|| status=...`: under `set -e -o pipefail` a failing ctest would end the
  # script here, before the failed tests' output below is printed.
  local status=0
  ctest --preset "$preset" -j "$(nproc)" --timeout "$timeout" | tail -n 25 || status=${PIPESTATUS[0]}
  if [ "$status" -ne 0 ]; then
    print_failed_output "$dir"
    echo "quickstart: the failed tests once more, with their output:"
    ctest --preset "$preset" --rerun-failed --output-on-failure --timeout "$timeout" | tail -n 200 || true
    exit "$status"
  fi
}

timed oracles install_oracles
timed tests run_tests default 900 build
if [ "${TESSERA_SKIP_ASAN:-0}" != 1 ]; then
  timed "asan build" build asan build-asan
  timed "asan tests" run_tests asan 1800 build-asan
fi
# The engine's tests under ThreadSanitizer (its own small build: the engine and what it links).
if [ "${TESSERA_SKIP_TSAN:-0}" != 1 ]; then
  timed "tsan build" build tsan build-tsan
  timed "tsan tests" run_tests tsan 1800 build-tsan
fi
