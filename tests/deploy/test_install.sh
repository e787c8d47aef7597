#!/bin/sh
# `cmake --install` with prefix /usr into a staging DESTDIR puts daemons in sbin, tools in bin,
# units in lib/systemd/system naming /usr/sbin binaries, the sysusers file, and the examples.
set -u
cmake=${CMAKE_COMMAND:?}
build=${PADDOCK_BUILD_DIR:?}
stage=$(mktemp -d "${TMPDIR:-/tmp}/paddock-install.XXXXXX") || exit 1
trap 'rm -rf "$stage"' EXIT
out=$(DESTDIR="$stage" "$cmake" --install "$build" --prefix /usr 2>&1) || {
    echo "FAIL: cmake --install: $out"
    exit 1
}
fail=0
for f in sbin/paddock-rm sbin/paddock-pn sbin/paddock-pn-exec sbin/paddock-jm bin/paddock \
    lib/systemd/system/paddock-rm.service lib/systemd/system/paddock-pn.service \
    "lib/systemd/system/paddock-jm@.service" "lib/systemd/system/paddock-pn@.service" \
    lib/sysusers.d/paddock.conf \
    share/doc/paddock/examples/rm.conf share/doc/paddock/examples/pn.conf \
    share/doc/paddock/examples/cluster.conf share/doc/paddock/examples/rm.conf.reference \
    share/doc/paddock/examples/pn.conf.reference \
    share/doc/paddock/examples/paddock-pn-run-as.conf share/doc/paddock/deploy.md; do
    if [ -e "$stage/usr/$f" ]; then
        echo "ok: /usr/$f"
    else
        echo "FAIL: /usr/$f not installed"
        fail=1
    fi
done
for d in rm pn; do
    grep -q "^ExecStart=/usr/sbin/paddock-$d " "$stage/usr/lib/systemd/system/paddock-$d.service" ||
        { echo "FAIL: paddock-$d.service does not start /usr/sbin/paddock-$d"; fail=1; }
done
grep -q "^ExecStart=/usr/sbin/paddock-jm " "$stage/usr/lib/systemd/system/paddock-jm@.service" ||
    { echo "FAIL: paddock-jm@.service does not start /usr/sbin/paddock-jm"; fail=1; }
# the references hold every key: a daemon loads its reference back unchanged
for d in rm pn; do
    "$stage/usr/sbin/paddock-$d" --config "$stage/usr/share/doc/paddock/examples/$d.conf.reference" \
        --print-config >/dev/null 2>&1 ||
        { echo "FAIL: $d.conf.reference does not load in paddock-$d"; fail=1; }
done
exit $fail
