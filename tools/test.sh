#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs the whole suite with ctest.
#   tools/test.sh              normal build in build/
#   tools/test.sh --sanitize   ASan+UBSan build in build-asan/
#   tools/test.sh -L unit      extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=OFF
dir=build
args=()
for a in "$@"; do
    case "$a" in
    --sanitize) sanitize=ON; dir=build-asan ;;
    *) args+=("$a") ;;
    esac
done

tools/install-deps.sh
cmake -S . -B "$dir" -DPADDOCK_SANITIZE="$sanitize" >/dev/null
# Progress lines are noise; warnings and errors are not.
if ! cmake --build "$dir" -j"$(nproc)" >"$dir/build.log" 2>&1; then
    grep -vE '^\[ *[0-9]+%\]' "$dir/build.log" >&2
    echo "paddock: build failed (full log in $dir/build.log)" >&2
    exit 1
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$dir"
ctest --output-on-failure -j"$(nproc)" "${args[@]}"
