#!/bin/sh
# paddock-rm under systemd's protocol, one replica on 127.0.0.1: READY=1 once it serves, a
# STATUS line with its Raft role, STOPPING=1 on SIGTERM, then exit 0; restarted on the same
# data directory without --bootstrap it serves again (what Restart=on-failure relies on).
# Kills exactly the pids it started, also on failure.
set -u
. "$(dirname "$0")/lib.sh"
bin=${PADDOCK_BIN_DIR:?PADDOCK_BIN_DIR is not set}
probe="$bin/deploy_probe"
T=$(mktemp -d "${TMPDIR:-/tmp}/paddock-rm-stop.XXXXXX") || exit 1
pids=""
ok=0
cleanup() {
    for p in $pids; do
        kill -KILL "$p" 2>/dev/null
    done
    [ $ok = 1 ] || for f in "$T"/*.log "$T"/*.out; do [ -f "$f" ] && { echo "---- $f"; tail -n 20 "$f"; }; done
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
# the replica's ports, free when the test starts (kept across its restart)
p_raft=$("$probe" --free-port) && p_api=$("$probe" --free-port) && p_pub=$("$probe" --free-port) ||
    fail "no free port on 127.0.0.1"
start_rm() { # start_rm NOTIFY_OUT [--bootstrap]
    "$probe" --notify-socket "$T/notify" --until STOPPING=1 --timeout-ms 30000 >"$1" &
    npid=$!
    pids="$pids $npid"
    wait_for 5 "the notify socket" test -S "$T/notify"
    NOTIFY_SOCKET="$T/notify" "$bin/paddock-rm" ${2:-} --set rm.id=1 --set "rm.data_dir=$T/rm" \
        --set cluster.ids=1 --set "cluster.raft=127.0.0.1:$p_raft" \
        --set "cluster.api=tcp://127.0.0.1:$p_api" \
        --set "cluster.pub=tcp://127.0.0.1:$p_pub" >>"$T/rm.log" 2>&1 &
    rm=$!
    pids="$pids $rm"
}

start_rm "$T/notify1.out" --bootstrap
wait_for 10 "READY=1" grep -q "^READY=1" "$T/notify1.out"
wait_for 10 "STATUS=raft leader" grep -q "^STATUS=raft leader" "$T/notify1.out"
kill -TERM $rm
wait_for 10 "STOPPING=1" grep -q "^STOPPING=1" "$T/notify1.out"
wait_for 10 "the replica to exit" exited $rm
wait $rm
rc=$?
[ $rc = 0 ] || fail "the replica exited with $rc after SIGTERM"
echo "ok: $(tr '\n' '|' <"$T/notify1.out"); exit 0"

start_rm "$T/notify2.out"
wait_for 10 "READY=1 after a restart" grep -q "^READY=1" "$T/notify2.out"
wait_for 10 "leadership after a restart" grep -q "^STATUS=raft leader" "$T/notify2.out"
kill -TERM $rm
wait_for 10 "the restarted replica to exit" exited $rm
wait $rm
rc=$?
[ $rc = 0 ] || fail "the restarted replica exited with $rc after SIGTERM"
echo "ok: restarted without --bootstrap: $(tr '\n' '|' <"$T/notify2.out")"
ok=1
