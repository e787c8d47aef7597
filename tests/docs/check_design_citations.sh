#!/bin/sh
# check_design_citations.sh SOURCE_DIR
# Comments cite the repository's own documents (docs/architecture.md and the docs/ pages it
# links), never a design note a clone does not carry. Fails when a C source or header, a CMake
# file or a Markdown page under common/, jm/, pn/, proto/, rm/, tools/, tests/ or docs/, or the
# top README.md, cites DESIGN.md (or "DESIGN's").
#
# PENDING lists the files whose citations are still to be rewritten; each must still cite (so
# the list only shrinks): when a file is mended, remove it here.
set -u
src=${1:?usage: check_design_citations.sh SOURCE_DIR}
PENDING="
"
pattern="DESIGN(\\.md|'s)"
fail=0
cd "$src" || exit 2
hits=$(find common jm pn proto rm tools tests docs README.md -type f \( -name '*.c' -o \
        -name '*.h' -o -name '*.md' -o -name '*.cmake' -o -name CMakeLists.txt \) \
        -exec grep -lE "$pattern" {} + 2>/dev/null | sort)
for f in $hits; do
    case "$PENDING" in
    *"
$f
"*) ;;
    *)
        echo "FAIL: $f cites DESIGN.md; cite docs/architecture.md or the docs/ page instead:"
        grep -nE "$pattern" "$f" | sed 's/^/    /'
        fail=1
        ;;
    esac
done
for f in $PENDING; do
    if ! grep -qE "$pattern" "$f" 2>/dev/null; then
        echo "FAIL: $f no longer cites DESIGN.md: remove it from PENDING in $0"
        fail=1
    fi
done
[ "$fail" -eq 0 ] && echo "ok: no source, CMake file or page cites DESIGN.md outside the $(echo $PENDING | wc -w) pending"
exit "$fail"
