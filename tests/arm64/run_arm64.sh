#!/usr/bin/env bash
# run_arm64.sh SOURCE_DIR BUILD_DIR build|conformance|e2e
# The edge build's tests, run by the x86 build's CTest (tests/CMakeLists.txt):
#   build        configures BUILD_DIR with toolchains/aarch64-linux-gnu.cmake
#                (ccache where installed) and builds the CLI and the
#                conformance and e2e suites for aarch64
#   conformance  runs the whole conformance suite under qemu-aarch64; its
#                cases run every kernel on each runnable ISA family
#                (for_each_isa: portable and neon_dotprod, which qemu's
#                default CPU, "max", has)
#   e2e          runs the end-to-end cases on the smallest reference models
#                (the CLI under qemu too: TESSERA_TEST_EMULATOR)
# Without Debian's g++-aarch64-linux-gnu or qemu-user it exits 77, which CTest
# reports as skipped; tools/quickstart.sh test installs both.
# qemu runs the code, it does not time it: nothing here measures speed.
set -euo pipefail
src=$1 dir=$2 mode=$3
sysroot=/usr/aarch64-linux-gnu

missing=()
command -v aarch64-linux-gnu-g++ >/dev/null 2>&1 || missing+=(g++-aarch64-linux-gnu)
command -v qemu-aarch64 >/dev/null 2>&1 || missing+=(qemu-user)
if [ ${#missing[@]} -gt 0 ]; then
  echo "tessera tests: skipping the arm64 $mode: not installed: ${missing[*]} (tools/quickstart.sh test installs them)"
  exit 77
fi
export QEMU_LD_PREFIX=$sysroot
emulator="qemu-aarch64 -L $sysroot"

case "$mode" in
  build)
    mkdir -p "$dir"
    log=$dir/arm64-build.log
    if [ ! -f "$dir/build.ninja" ]; then
      launcher=()
      command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
      cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$src/toolchains/aarch64-linux-gnu.cmake" \
        -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >"$log" 2>&1 || { cat "$log"; exit 1; }
    fi
    start=$(date +%s)
    cmake --build "$dir" --target tessera tessera_conformance_tests tessera_e2e_tests -j "$(nproc)" >"$log" 2>&1 ||
      { tail -n 150 "$log"; exit 1; }
    echo "arm64: built in $(($(date +%s) - start)) s ($(file -b "$dir/bin/tessera" | cut -d, -f1-2))"
    ;;
  conformance)
    bin=$dir/tests/tessera_conformance_tests
    [ -x "$bin" ] || { echo "arm64: $bin is not built (the arm64 build test failed?)"; exit 1; }
    start=$(date +%s)
    (cd "$dir/tests" && $emulator "$bin" --no-version)
    echo "arm64: the conformance suite took $(($(date +%s) - start)) s under qemu-aarch64"
    # On a core without the dot product (Cortex-A53, Armv8.0) the probe must
    # offer portable alone, and the kernel names must say so ('?': a comma).
    out=$(cd "$dir/tests" && qemu-aarch64 -cpu cortex-a53 -L $sysroot "$bin" --no-version \
      --test-case="runnable ISAs start with portable*,matmul kernel names say dtype? shape and ISA" 2>&1) ||
      { echo "$out"; exit 1; }
    echo "$out" | tail -n 3
    echo "$out" | grep -q "test cases: *2 | *2 passed" || { echo "arm64: the Cortex-A53 cases did not both run"; exit 1; }
    ;;
  e2e)
    bin=$dir/tests/tessera_e2e_tests
    [ -x "$bin" ] || { echo "arm64: $bin is not built (the arm64 build test failed?)"; exit 1; }
    export TESSERA_TEST_EMULATOR=$emulator
    # The smallest models' reference cases (stories260K, aidreams260K,
    # llama-2-tiny-random): run.c's and llama.cpp's ids and logits, the
    # quantized and repacked weights, the pass pipelines. Left out: the zoo
    # and HF-folder cases (larger models; minutes each under qemu) and the
    # CLI-only cases (info, tokenize, convert: no kernels of their own).
    # doctest splits filters at commas: '?' stands for each comma in a name.
    cases=(
      "stories260K: every greedy reference line gives exactly run.c's ids (-n 200? --prompt-ids)"
      "aidreams260K: every greedy reference line gives run.c's ids and text (-p TEXT? -n 128)"
      "stories260K logits match run.c within 1e-4 relative? token by token"
      "stories260K logits match run.c within 1e-4 relative when the 48 tokens are one prefill"
      "stories260K converted to f32 GGUF gives exactly the reference ids"
      "stories260K in q8_0 GGUF keeps logits within the stated bound of the f32 model"
      "stories260K in q8_0 and q4_0: greedy ids with rows_x4 or rows_x16 weights are those without the repack"
      "stories260K in q4_0 and q8_0: logits with rows_x4 or rows_x16 weights equal the standard layout's bit for bit? prefill and decode"
      "stories260K: the reference ids with --batch-invariant? and tessera ir --batch-invariant marks the matmuls and attention"
      "llama-2-tiny-random.gguf: every greedy reference line gives exactly run.c's ids (-p TEXT --temp 0 -n 64)"
    )
    filter=$(IFS=,; echo "${cases[*]}")
    start=$(date +%s)
    out=$(mktemp)
    status=0
    (cd "$dir/tests" && $emulator "$bin" --no-version --test-case="$filter") 2>&1 | tee "$out" || status=${PIPESTATUS[0]}
    # A renamed case would match nothing and pass silently: every pattern must have run.
    ran=$(sed -n 's/^\[doctest\] test cases: *\([0-9]*\) .*/\1/p' "$out")
    rm -f "$out"
    [ "$status" -eq 0 ] || exit "$status"
    if [ "${ran:-0}" -ne ${#cases[@]} ]; then
      echo "arm64: ${ran:-0} e2e cases ran, ${#cases[@]} expected: a case was renamed (update tests/arm64/run_arm64.sh)"
      exit 1
    fi
    echo "arm64: the e2e cases took $(($(date +%s) - start)) s under qemu-aarch64"
    ;;
  *)
    echo "usage: run_arm64.sh SOURCE_DIR BUILD_DIR build|conformance|e2e" >&2
    exit 2
    ;;
esac
