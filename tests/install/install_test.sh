#!/usr/bin/env bash
# install_test.sh BUILD_DIR SOURCE_DIR SHARED_DIR CXX GENERATOR HAS_VULKAN [EXTRA_FLAGS]
# Installs the build into a temporary prefix, builds tests/install/consumer/
# against it twice (find_package(tessera) and pkg-config), outside the tree,
# runs both on stories260K.bin and checks what they print: the model's shape
# against the file's own llama2.c header, greedy ids against run.c's
# reference. Then checks the installed CLI: that it runs from its own
# libtessera.so, and lists the installed Vulkan plugin (when built).
set -euo pipefail
trap 'echo "install_test: line $LINENO failed: $BASH_COMMAND" >&2' ERR
build=$1 src=$2 shared=$3 cxx=$4 generator=$5 has_vulkan=$6 extra_flags=${7:-}
model=$shared/models/stories260K.bin
reference=$shared/reference/stories260K.greedy.txt
steps=48

work=$(realpath "$(mktemp -d "${TMPDIR:-/tmp}/tessera-install.XXXXXX")")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "install_test: $*" >&2; exit 1; }
unset TESSERA_BACKEND_PATH  # plugins must be found where the install put them

cmake --install "$build" --prefix "$prefix" > "$work/install.log" || { cat "$work/install.log"; fail "cmake --install failed"; }
for f in bin/tessera lib/libtessera.so include/tessera/tessera.h lib/cmake/tessera/tesseraConfig.cmake \
         lib/cmake/tessera/tesseraConfigVersion.cmake lib/cmake/tessera/tesseraTargets.cmake lib/pkgconfig/tessera.pc; do
  [[ -e $prefix/$f ]] || fail "$f was not installed (ls: $(cd "$prefix" && find . -type f | sort | tr '\n' ' '))"
done

# Only the public API leaves libtessera.so: no graph, runtime or oneDNN symbols.
leaked=$(nm -DC --defined-only "$prefix/lib/libtessera.so" | grep -E 'tessera::(graph|cpu|vulkan)::|ModelRunner|tessera::Session|dnnl' || true)
[[ -z $leaked ]] || fail "libtessera.so exports internals: $(echo "$leaked" | head -5)"

# 1. find_package(tessera), target tessera::tessera.
cmake -S "$src/tests/install/consumer" -B "$work/cmake-consumer" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_FLAGS="$extra_flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$extra_flags" > "$work/configure.log" || { cat "$work/configure.log"; fail "consumer: configure failed"; }
cmake --build "$work/cmake-consumer" > "$work/build.log" || { cat "$work/build.log"; fail "consumer: build failed"; }

# 2. pkg-config, with no CMake at all.
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
libdir=$(pkg-config --variable=libdir tessera)
# shellcheck disable=SC2046,SC2086
"$cxx" -std=c++20 -O1 $extra_flags "$src/tests/install/consumer/consumer.cpp" $(pkg-config --cflags --libs tessera) \
  -Wl,-rpath,"$libdir" -o "$work/pc-consumer" || fail "consumer: pkg-config build failed"

# The oracles: the llama2.c header (dim, hidden_dim, layers, heads, kv_heads, vocab, seq_len) and run.c's ids.
read -r dim ffn layers heads kv vocab ctx < <(od -An -t d4 -N28 "$model" | tr '\n' ' '; echo)
vocab=${vocab#-}  # negative: the classifier is not shared
want_config="config llama dim=$dim ffn=$ffn layers=$layers heads=$heads kv_heads=$kv vocab=$vocab context=$ctx"
line=$(grep -m1 -v '^#' "$reference")  # not | head: pipefail and grep's SIGPIPE
prompt=${line%% | *}
prompt=${prompt// /}
want_ids=$(echo "${line#* | }" | tr -d ' ' | cut -d, -f1-$((steps + 1)))
# The engine's four concurrent requests: the first four reference lines.
mapfile -t lines < <(grep -v '^#' "$reference")
engine_prompts=() engine_want=()
for k in 0 1 2 3; do
  p=${lines[$k]%% | *}
  engine_prompts+=("${p// /}")
  engine_want+=("$(echo "${lines[$k]#* | }" | tr -d ' ' | cut -d, -f1-$((steps + 1)))")
done

for consumer in "$work/cmake-consumer/consumer" "$work/pc-consumer"; do
  out=$("$consumer" "$model" "$steps" "${engine_prompts[@]}") || fail "$consumer failed: $out"
  got_config=$(echo "$out" | grep '^config ')
  [[ $got_config == "$want_config" ]] || fail "$consumer: '$got_config', the file's header says '$want_config'"
  got_ids=$(echo "$out" | sed -n 's/^ids //p')
  [[ $got_ids == "$want_ids" ]] || fail "$consumer: ids $got_ids; run.c gives $want_ids"
  for k in 0 1 2 3; do
    got=$(echo "$out" | sed -n "s/^engine $k //p")
    [[ $got == "${engine_want[$k]}" ]] || fail "$consumer: engine request $k streamed $got; run.c gives ${engine_want[$k]}"
  done
  lib=$(realpath "$(ldd "$consumer" | awk '/libtessera\.so/ {print $3}')")
  [[ $lib == "$prefix"/lib/libtessera.so* ]] || fail "$consumer loads libtessera from '$lib', not the prefix"
done

# The installed CLI runs from the installed library (RPATH $ORIGIN/../lib)...
lib=$(realpath "$(ldd "$prefix/bin/tessera" | awk '/libtessera\.so/ {print $3}')")
[[ $lib == "$prefix"/lib/libtessera.so* ]] || fail "bin/tessera loads libtessera from '$lib', not the prefix"
cli_ids=$("$prefix/bin/tessera" run -m "$model" --prompt-ids "$prompt" --temp 0 -n "$steps" --print-ids 2>/dev/null)
[[ $cli_ids == "$want_ids" ]] || fail "installed tessera run: $cli_ids; run.c gives $want_ids"
# ... and finds the plugin in PREFIX/lib/tessera, beside libtessera.so.
if [[ $has_vulkan == ON || $has_vulkan == 1 || $has_vulkan == TRUE ]]; then
  [[ -e $prefix/lib/tessera/libtessera-backend-vulkan.so ]] || fail "the Vulkan plugin was not installed in lib/tessera"
  devices=$("$prefix/bin/tessera" devices)
  grep -q '^vulkan' <<< "$devices" || fail "installed tessera devices does not list the vulkan backend: $devices"
  ! grep -q 'plugin not loaded' <<< "$devices" || fail "installed tessera devices: $devices"
fi
# Every plugin built beside the build's CLI (Vulkan, CUDA, ROCm) is installed,
# and the installed CLI loads each (a GPU plugin without a GPU lists no device).
for built in "$build"/bin/libtessera-backend-*.so; do
  [[ -e $built ]] || continue
  [[ -e $prefix/lib/tessera/$(basename "$built") ]] || fail "$(basename "$built") was not installed in lib/tessera"
done
echo "install_test: installed, consumers built by find_package and pkg-config, ids match run.c ($((steps + 1)) ids; 4 engine streams)"
