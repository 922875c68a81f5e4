#!/usr/bin/env bash
# run_fuzz.sh SOURCE_DIR WORK_DIR SECONDS
# Builds the request parser's libFuzzer target with Debian's clang
# (-fsanitize=fuzzer,address,undefined) and fuzzes it for SECONDS from the
# seed corpus in tests/fuzz/openai_request_corpus (copied: libFuzzer adds to
# its corpus directory). A crash, a sanitizer report or a leak fails the
# test; without clang and its libFuzzer runtime it exits 77, which CTest
# reports as skipped.
set -euo pipefail
src=$1 work=$2 seconds=$3
cxx=""
for c in clang++-14 clang++; do command -v "$c" >/dev/null 2>&1 && { cxx=$c; break; }; done
if [ -z "$cxx" ]; then
  echo "tessera tests: skipping the libFuzzer run: no clang++ on PATH (install clang-14 libclang-rt-14-dev)"
  exit 77
fi
mkdir -p "$work"
bin=$work/openai_request_fuzz
if [ ! -x "$bin" ] || [ "$src/tools/tessera/openai_request.cpp" -nt "$bin" ] || [ "$src/tools/tessera/openai_request.h" -nt "$bin" ] ||
   [ "$src/tests/fuzz/openai_request_fuzz.cpp" -nt "$bin" ]; then
  if ! "$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I "$src/include" -I "$src" \
       "$src/tools/tessera/openai_request.cpp" "$src/tests/fuzz/openai_request_fuzz.cpp" -o "$bin.tmp" 2>"$work/build.log"; then
    if grep -q "fuzzer" "$work/build.log" && grep -qi "cannot find\|no such file" "$work/build.log"; then
      echo "tessera tests: skipping the libFuzzer run: $cxx has no libFuzzer runtime (install libclang-rt-14-dev)"
      exit 77
    fi
    cat "$work/build.log"
    exit 1
  fi
  mv "$bin.tmp" "$bin"
fi
rm -rf "$work/corpus"
cp -r "$src/tests/fuzz/openai_request_corpus" "$work/corpus"
echo "fuzzing parse_openai_request for ${seconds}s (libFuzzer prints its seed)"
"$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 "$work/corpus" 2>&1 | tail -n 25
exit "${PIPESTATUS[0]}"
