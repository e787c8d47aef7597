#!/bin/sh
# The example configurations load in the daemons (unknown keys and bad values are refused),
# and the generated references list every key of each schema.
set -u
bin=${PADDOCK_BIN_DIR:?}
src=${PADDOCK_SOURCE_DIR:?}/deploy/examples
fail=0
for d in rm pn; do
    if out=$("$bin/paddock-$d" --config "$src/$d.conf" --print-config 2>&1); then
        echo "ok: examples/$d.conf loads in paddock-$d"
    else
        echo "FAIL: examples/$d.conf: $out"
        fail=1
    fi
    # every key set in the example has a documented default in --print-schema
    schema=$("$bin/paddock-$d" --print-schema)
    for key in $(grep -E '^[a-z_]+ *=' "$src/$d.conf" | sed 's/ *=.*//'); do
        if ! printf '%s\n' "$schema" | grep -q "^$key = \\|^$key =\$"; then
            echo "FAIL: $d.conf sets $key, which --print-schema does not list"
            fail=1
        fi
    done
done
# cluster.conf: the client file; paddock reads it (an unreachable cluster is fine here: the
# command must fail on the connection, not on the file)
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cp "$src/cluster.conf" "$tmp/cluster.conf"
out=$("$bin/paddock" rm status --cluster "$tmp" --json 2>&1)
case $out in
*cluster.conf*|*unknown\ key*|*cannot\ parse*)
    echo "FAIL: examples/cluster.conf: $out"
    fail=1 ;;
*) echo "ok: examples/cluster.conf parses ($out)" | head -c 300; echo ;;
esac
exit $fail
