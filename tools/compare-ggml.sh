#!/usr/bin/env bash
# Side-by-side CPU matmul timing: `tessera bench --op matmul` against ggml's
# `test-backend-ops perf` on the same shapes, the same machine and in the
# same session (issue 14: GEMV at m=4096, k=14336, n=1, --hot, >= 1.2x ggml;
# GEMM at n=512, >= 3x ggml), for q4_0, q8_0, q4_K and q6_K.
#
#   tools/compare-ggml.sh LLAMA_CPP_SOURCE_DIR [ROUNDS]     (ROUNDS: 3)
#
# A developer tool, not a test: it builds nothing of ours (run
# `cmake --build build --target tessera` first) and prints a markdown table
# of medians on stdout; progress, load averages and raw figures go to stderr.
#
# Environment:
#   GGML_BUILD_DIR  where ggml is built (LLAMA_CPP_SOURCE_DIR/build-compare-cpu);
#                   if GGML_BUILD_DIR/bin/test-backend-ops exists it is reused.
#   GGML_CMAKE_ARGS extra cmake arguments for ggml (e.g. -DGGML_OPENMP=OFF).
#   JOBS            build parallelism (2).
#   TESSERA         our binary (build/bin/tessera).
#
# Shapes: ggml's MUL_MAT(m, n, k) is A = weights [m rows of k], B = activations
# [n columns of k]; that is our --m (weight rows), --k (inputs), --n (tokens).
# Both count 2*m*n*k FLOPs. ggml's perf cases include
# test_mul_mat(type_a, f32, 4096, bs, 14336) for bs in {1, ..., 512}; the
# script says so if the checkout at hand lacks one of them.
#
# Both sides are "hot": ggml's perf reuses the same tensors run after run, so
# ours runs with --hot (one copy) too. At this shape the weights (33-62 MB)
# may not fit the last-level cache either way. For n=1 the table also gives
# ours streamed (copies rotated over 4x the LLC), the figure a model step sees.
#
# Threads: test-backend-ops gives the CPU backend
# std::thread::hardware_concurrency() threads (the online CPUs) and has no flag
# for it, so ours is given the same count.
set -euo pipefail

die() { echo "compare-ggml: $*" >&2; exit 1; }
load() { uptime | sed 's/.*load average: *//'; }   # "1-min, 5-min, 15-min"

if [ $# -lt 1 ] || [ $# -gt 2 ]; then die "usage: tools/compare-ggml.sh LLAMA_CPP_SOURCE_DIR [ROUNDS]"; fi
src=$(cd "$1" 2>/dev/null && pwd) || die "no such directory: $1"
rounds=${2:-3}
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, got '$rounds'"
if [ ! -f "$src/tests/test-backend-ops.cpp" ] || [ ! -d "$src/ggml/include" ]; then
  die "$src does not look like a llama.cpp checkout (no tests/test-backend-ops.cpp or ggml/include)"
fi

repo=$(cd "$(dirname "$0")/.." && pwd)
tessera=${TESSERA:-$repo/build/bin/tessera}
[ -x "$tessera" ] || die "no $tessera; build it first: cmake --preset default && cmake --build build --target tessera"
for tool in awk sort getconf uptime; do
  command -v "$tool" >/dev/null 2>&1 || die "missing tool: $tool"
done

bdir=${GGML_BUILD_DIR:-$src/build-compare-cpu}
tbo=$bdir/bin/test-backend-ops
jobs=${JOBS:-2}
threads=$(getconf _NPROCESSORS_ONLN)   # what hardware_concurrency() returns on glibc

# --- ggml: build the CPU backend and test-backend-ops, once -----------------
# Only the ggml libraries are built with cmake; test-backend-ops.cpp needs
# nothing but ggml's headers, so it is compiled here on its own instead of
# through the `test-backend-ops` target, which would also build libllama and
# llama-common (~200 more translation units).
if [ ! -x "$tbo" ]; then
  cxx=${CXX:-c++}
  command -v cmake >/dev/null 2>&1 || die "missing tool: cmake"
  command -v "$cxx" >/dev/null 2>&1 || die "missing tool: $cxx (set CXX)"
  gen=(); command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  launcher=(); command -v ccache >/dev/null 2>&1 \
    && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  echo "== building ggml (CPU, native) in $bdir" >&2
  # Shared libraries so that they land in bin/ (llama.cpp's output directory)
  # and the CPU backend registers itself when libggml loads.
  # shellcheck disable=SC2086  # GGML_CMAKE_ARGS is a list of words on purpose
  cmake -S "$src" -B "$bdir" "${gen[@]}" "${launcher[@]}" \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=ON \
    -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
    ${GGML_CMAKE_ARGS:-} >"$bdir.configure.log" 2>&1 \
    || die "configuring ggml failed; see $bdir.configure.log"
  cmake --build "$bdir" --target ggml -j "$jobs" >"$bdir.build.log" 2>&1 \
    || die "building ggml failed; see $bdir.build.log"
  # -O3 -DNDEBUG as cmake's Release gives the test; -march is not needed here,
  # the kernels are in libggml-cpu, built with -march=native above.
  ccache_cmd=(); command -v ccache >/dev/null 2>&1 && ccache_cmd=(ccache)
  "${ccache_cmd[@]}" "$cxx" -std=c++17 -O3 -DNDEBUG -pthread -I"$src/ggml/include" \
    "$src/tests/test-backend-ops.cpp" -o "$tbo" \
    -L"$bdir/bin" -lggml -lggml-base -Wl,-rpath,"$bdir/bin" >>"$bdir.build.log" 2>&1 \
    || die "compiling test-backend-ops.cpp on its own failed (see $bdir.build.log); build the test-backend-ops target and point GGML_BUILD_DIR at it"
fi

# --- one measurement each ---------------------------------------------------
m=4096; k=14336
flop() { echo $(( 2 * m * k * $1 )); }   # FLOPs of one matmul at n tokens

# ours: prints time_us of one call (the bench's median over its calls).
ours() {  # type n hot(0|1)
  local hot=(); [ "$3" = 1 ] && hot=(--hot)
  local json
  json=$("$tessera" bench --op matmul --type "$1" --m "$m" --k "$k" --n "$2" \
         --threads "$threads" "${hot[@]}" --json) || die "tessera bench failed for $1 n=$2"
  # One JSON object on one line; take "time_us":<number>.
  local t
  t=$(printf '%s\n' "$json" | grep -o '"time_us":[0-9.eE+-]*' | head -n 1 | cut -d: -f2)
  [ -n "$t" ] || die "no time_us in tessera's JSON for $1 n=$2"
  echo "$t"
}

# ggml: prints us/run of the one perf case with this type and shape, or "n/a"
# if this checkout has no such case.
ggml() {  # type n
  # The params string starts type_a=..,type_b=..,m=..,n=..,k=..,bs=[1,1],nr=[1,1]
  # (later versions append per=, k_v=, o=); anchored so n=1 does not match
  # n=16 and no batched/broadcast variant slips in.
  local re="^type_a=$1,type_b=f32,m=$m,n=$2,k=$k,bs=\\[1,1\\],nr=\\[1,1\\](,|\$)"
  local out lines
  out=$("$tbo" perf -o MUL_MAT -b CPU -p "$re" 2>&1) || die "test-backend-ops failed for $1 n=$2: $(printf '%s' "$out" | tail -n 1)"
  # Strip colour codes; keep the result lines ("<runs> runs - <t> us/run - ...").
  lines=$(printf '%s\n' "$out" | sed 's/\x1b\[[0-9;]*m//g' | grep "MUL_MAT(type_a=$1," | grep 'us/run' || true)
  case $(printf '%s' "$lines" | grep -c . || true) in
    0) echo "n/a" ;;
    1) printf '%s\n' "$lines" | awk '{ for (i = 2; i <= NF; i++) if ($i == "us/run") { print $(i-1); exit } }' ;;
    *) die "more than one ggml perf case matched $1 n=$2: $lines" ;;
  esac
}

# --- the rounds ---------------------------------------------------------------
types=(q4_0 q8_0 q4_K q6_K)
raw=$(mktemp); trap 'rm -f "$raw"' EXIT
loads=()
echo "== $rounds round(s), $threads thread(s); tessera: $tessera; ggml: $tbo" >&2
# ggml's OpenMP threads spin at barriers, so another process on the same
# cores slows ggml far more than ours (which sleeps): on a 2-core host with a
# compile running, ggml's GEMV ran 3-8x slower. Say so when it is not quiet.
if awk -v l="$(load | cut -d, -f1)" -v c="$threads" 'BEGIN { exit !(l > 0.25 * c) }'; then
  echo "== warning: load average $(load) on $threads CPUs; figures (ggml's most) will be noisy" >&2
fi
for r in $(seq 1 "$rounds"); do
  before=$(load); s=""
  for t in "${types[@]}"; do
    for n in 1 512; do
      # Alternate who goes first, so neither always runs on a warmer (or
      # hotter-throttled) CPU.
      if (( r % 2 )); then
        o=$(ours "$t" "$n" 1); g=$(ggml "$t" "$n")
      else
        g=$(ggml "$t" "$n"); o=$(ours "$t" "$n" 1)
      fi
      echo "$r $t $n hot $o" >>"$raw"; echo "$r $t $n ggml $g" >>"$raw"
      if [ "$n" = 1 ]; then s=$(ours "$t" 1 0); echo "$r $t 1 cold $s" >>"$raw"; fi
      echo "round $r  $t n=$n  tessera ${o} us  ggml ${g} us${s:+  tessera streamed ${s} us}" >&2
      s=""
    done
  done
  loads+=("round $r: $before → $(load)")
  echo "round $r  load average before: $before  after: ${loads[-1]#*→ }" >&2
done

# --- medians and the table ------------------------------------------------------
# The median, or the best (highest), of the GFLOP/s figures (2*m*n*k /
# time_us / 1e3) of one series; "n/a" if the series has none. On a shared
# host the best of each side is a second, less load-dependent estimate of
# what it can do; the median is what a run typically sees.
stat() {  # median|best type n series
  local f; f=$(flop "$3")
  awk -v t="$2" -v n="$3" -v s="$4" -v f="$f" '$2 == t && $3 == n && $4 == s && $5 != "n/a" { print f / $5 / 1e3 }' "$raw" \
    | sort -g | awk -v how="$1" '{ v[NR] = $1 }
        END { if (NR == 0) print "n/a"
              else if (how == "best") printf "%.1f\n", v[NR]
              else if (NR % 2) printf "%.1f\n", v[(NR + 1) / 2]
              else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2f\n", a / b }'; }

echo
echo "$rounds round(s), GFLOP/s (2*m*n*k / time), m=$m k=$k, $threads threads, $(date -u '+%Y-%m-%d %H:%M UTC')."
echo "Ratios are tessera / ggml, of the medians and of the best rounds."
echo
echo "| type | n | tessera --hot median | ggml median | ratio | tessera best | ggml best | ratio (best) | goal | tessera streamed median |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for t in "${types[@]}"; do
  for n in 1 512; do
    o=$(stat median "$t" "$n" hot); g=$(stat median "$t" "$n" ggml)
    ob=$(stat best "$t" "$n" hot); gb=$(stat best "$t" "$n" ggml)
    goal="≥ 1.2"; cold="-"
    if [ "$n" = 1 ]; then cold=$(stat median "$t" 1 cold); else goal="≥ 3"; fi
    echo "| $t | $n | $o | $g | $(ratio "$o" "$g") | $ob | $gb | $(ratio "$ob" "$gb") | $goal | $cold |"
  done
done
echo
echo "Load averages (1, 5, 15 min) before → after each round:"
printf -- '- %s\n' "${loads[@]}"
