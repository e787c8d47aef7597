#!/bin/sh
# systemd-analyze verify accepts the units (the copies naming this build's binaries), and each
# unit keeps the settings docs/deploy.md relies on.
set -u
units=${PADDOCK_DEPLOY_UNITS:?}
if ! command -v systemd-analyze >/dev/null 2>&1; then
    echo "SKIP: systemd-analyze is not installed (Debian package systemd)"
    exit 77
fi
fail=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# paddock-jm may not be built yet: verify the template against a stand-in executable then.
jm="${PADDOCK_BIN_DIR:?}/paddock-jm"
for u in paddock-rm.service paddock-pn.service; do
    cp "$units/$u" "$tmp/$u"
done
cp "$units/paddock-pn@.service" "$tmp/paddock-pn@.service"
cp "$tmp/paddock-pn@.service" "$tmp/paddock-pn@2.service"
if [ -x "$jm" ]; then
    cp "$units/paddock-jm@.service" "$tmp/paddock-jm@.service"
else
    echo "note: $jm not built; verifying paddock-jm@.service with /bin/true as ExecStart"
    sed "s|^ExecStart=[^ ]*|ExecStart=/bin/true|" "$units/paddock-jm@.service" \
        >"$tmp/paddock-jm@.service"
fi
cp "$tmp/paddock-jm@.service" "$tmp/paddock-jm@j-test.service"
for u in paddock-rm.service paddock-pn.service paddock-pn@2.service paddock-jm@j-test.service; do
    # SYSTEMD_LOG_LEVEL so that warnings (unknown keys, bad values) are printed and counted
    out=$(cd "$tmp" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no "$tmp/$u" 2>&1)
    rc=$?
    # verify also complains about units it pulls in that are not ours; keep lines about ours
    ours=$(printf '%s\n' "$out" | grep -i "paddock" || true)
    if [ $rc -ne 0 ] || [ -n "$ours" ]; then
        echo "FAIL: systemd-analyze verify $u (exit $rc):"
        printf '%s\n' "$out"
        fail=1
    else
        echo "ok: systemd-analyze verify $u"
    fi
done
need() { # unit key=value
    if ! grep -qx "$2" "$tmp/$1"; then
        echo "FAIL: $1 lacks $2"
        fail=1
    fi
}
for u in paddock-rm.service paddock-pn.service; do
    need $u "Type=notify"
    need $u "User=paddock"
    need $u "Restart=on-failure"
done
need paddock-pn.service "Delegate=yes"
need paddock-pn.service "KillMode=mixed"
# several PNs on one machine: each instance its own configuration and work directory
need paddock-pn@.service "Type=notify"
need paddock-pn@.service "Delegate=yes"
need paddock-pn@.service "KillMode=mixed"
need paddock-pn@.service "StateDirectory=paddock paddock/pn-%i"
grep -q "^ExecStart=.*--config /etc/paddock/pn-%i.conf --set pn.work_dir=/var/lib/paddock/pn-%i" \
    "$tmp/paddock-pn@.service" || { echo "FAIL: paddock-pn@.service: config or work_dir not per instance"; fail=1; }
# a JM that dies is started again and resumes its job; the job's own failure (1) and a fenced
# stale JM (3) are final
need paddock-jm@.service "Restart=on-failure"
need paddock-jm@.service "RestartPreventExitStatus=1 3"
need paddock-jm@.service "StartLimitBurst=5"
# a PN that spawns tasks must not carry a system call filter or W^X
for bad in SystemCallFilter MemoryDenyWriteExecute RestrictAddressFamilies ProtectControlGroups; do
    if grep -q "^$bad=" "$tmp/paddock-pn.service" "$tmp/paddock-pn@.service"; then
        echo "FAIL: paddock-pn.service sets $bad (tasks are arbitrary programs)"
        fail=1
    fi
done
exit $fail
