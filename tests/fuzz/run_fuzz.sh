#!/usr/bin/env bash
# run_fuzz.sh SOURCE_DIR SHARED_DIR WORK_DIR TARGET SECONDS [LIBFUZZER_ARGS...]
# Builds the libFuzzer target TARGET (tests/fuzz/targets.txt lists each
# target's sources; tests/fuzz/TARGET_fuzz.cpp is its harness) with Debian's
# clang (-fsanitize=fuzzer,address,undefined) and fuzzes it for SECONDS from
# its seeds: tests/fuzz/TARGET_corpus/ and the shared files named in
# tests/fuzz/TARGET.shared_seeds, copied into WORK_DIR/TARGET/corpus
# (libFuzzer adds to its corpus directory). Inputs are cut at 64 KiB
# (-max_len) unless LIBFUZZER_ARGS says otherwise. A crash, a sanitizer report
# or a leak fails the test; without clang and its libFuzzer runtime it exits
# 77, which CTest reports as skipped.
#   run_fuzz.sh SRC SHARED WORK TARGET replay   replays tests/fuzz/TARGET_regressions/* once each.
set -euo pipefail
src=$1 shared=$2 work=$3 target=$4 seconds=$5
shift 5
sources=$(awk -v t="$target" '$1 == t { $1 = ""; print }' "$src/tests/fuzz/targets.txt")
if [ -z "$sources" ]; then
  echo "run_fuzz.sh: no target '$target' in tests/fuzz/targets.txt" >&2
  exit 2
fi
cxx=""
for c in clang++-14 clang++; do command -v "$c" >/dev/null 2>&1 && { cxx=$c; break; }; done
if [ -z "$cxx" ]; then
  echo "tessera tests: skipping the libFuzzer run: no clang++ on PATH (install clang-14 libclang-rt-14-dev)"
  exit 77
fi
dir=$work/$target
mkdir -p "$dir"
bin=$dir/${target}_fuzz
paths=("$src/tests/fuzz/${target}_fuzz.cpp")
for s in $sources; do paths+=("$src/$s"); done
stale=0
[ -x "$bin" ] || stale=1
if [ $stale = 0 ]; then
  # Any source or any header under the tree newer than the binary rebuilds it.
  for p in "${paths[@]}" "$src/tests/fuzz/targets.txt"; do [ "$p" -nt "$bin" ] && { stale=1; break; }; done
  [ $stale = 0 ] && [ -n "$(find "$src/core" "$src/engine" "$src/tools" "$src/include" -name '*.h' -newer "$bin" -print -quit)" ] && stale=1
fi
if [ $stale = 1 ]; then
  if ! "$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
       -I "$src/include" -I "$src" "${paths[@]}" -o "$bin.tmp" 2>"$dir/build.log"; then
    if grep -q "fuzzer" "$dir/build.log" && grep -qi "cannot find\|no such file" "$dir/build.log"; then
      echo "tessera tests: skipping the libFuzzer run: $cxx has no libFuzzer runtime (install libclang-rt-14-dev)"
      exit 77
    fi
    cat "$dir/build.log"
    exit 1
  fi
  mv "$bin.tmp" "$bin"
fi
if [ "$seconds" = replay ]; then
  regressions=$src/tests/fuzz/${target}_regressions
  [ -d "$regressions" ] || { echo "no $regressions"; exit 0; }
  # Each input once: libFuzzer runs the files given and exits non-zero on the first failure.
  "$bin" -rss_limit_mb=2048 -artifact_prefix="$dir/" "$regressions"/* 2>&1 | tail -n 25
  exit "${PIPESTATUS[0]}"
fi
rm -rf "$dir/corpus"
mkdir -p "$dir/corpus"
[ -d "$src/tests/fuzz/${target}_corpus" ] && cp "$src/tests/fuzz/${target}_corpus"/* "$dir/corpus/"
if [ -f "$src/tests/fuzz/$target.shared_seeds" ]; then
  while read -r seed; do
    [ -z "$seed" ] && continue
    [ -f "$shared/$seed" ] && cp "$shared/$seed" "$dir/corpus/shared_$(echo "$seed" | tr / _)"
  done <"$src/tests/fuzz/$target.shared_seeds"
fi
[ -d "$src/tests/fuzz/${target}_regressions" ] && cp "$src/tests/fuzz/${target}_regressions"/* "$dir/corpus/"
echo "fuzzing $target for ${seconds}s (libFuzzer prints its seed)"
# The whole log stays in WORK_DIR/TARGET/last_run.log (its "DONE cov: ft:"
# line is the coverage to record); the terminal gets its end.
# Crash, leak, timeout and slow-unit inputs go to WORK_DIR/TARGET/, never the
# caller's directory (a source tree).
"$bin" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/" "$@" "$dir/corpus" 2>&1 |
  tee "$dir/last_run.log" | tail -n 25
exit "${PIPESTATUS[0]}"
