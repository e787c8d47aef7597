#!/usr/bin/env bash
# Fails when a C file differs from what .clang-format (clang-format 14) would make of it.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.c' '*.h')
[ -z "$files" ] && exit 0
if ! echo "$files" | xargs clang-format --dry-run --Werror 2>/tmp/paddock-format.$$; then
    head -40 /tmp/paddock-format.$$ >&2
    rm -f /tmp/paddock-format.$$
    echo "format: run clang-format -i on the files above" >&2
    exit 1
fi
rm -f /tmp/paddock-format.$$
