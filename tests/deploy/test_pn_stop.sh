#!/bin/sh
# paddock-pn under systemd's protocols, on 127.0.0.1 without an RM:
#   - Type=notify: READY=1 once it serves, STATUS lines, STOPPING=1 on SIGTERM (NOTIFY_SOCKET
#     bound by the test);
#   - pn.stop_mode = finish: after SIGTERM a new task is refused ("node draining"), the running
#     one ends and reports success, then the PN exits 0;
#   - pn.stop_mode = handback: SIGTERM kills the running task at once and reports it lost;
#   - SIGUSR1 drains whatever the mode: the running task finishes, the PN exits 0.
# Kills exactly the pids it started, also on failure.
set -u
. "$(dirname "$0")/lib.sh"
bin=${PADDOCK_BIN_DIR:?PADDOCK_BIN_DIR is not set}
probe="$bin/deploy_probe"
T=$(mktemp -d "${TMPDIR:-/tmp}/paddock-pn-stop.XXXXXX") || exit 1
pids=""
ok=0
cleanup() {
    for p in $pids; do
        kill -KILL "$p" 2>/dev/null
    done
    if [ $ok != 1 ]; then
        for f in "$T"/*.log "$T"/*.out; do
            [ -f "$f" ] && { echo "---- $f"; tail -n 20 "$f"; }
        done
    fi
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
say() { echo "[pn-stop] $*"; }
last_line_is() { tail -n 1 "$1" 2>/dev/null | grep -q "$2"; }

# start_pn NAME MODE [NOTIFY_SOCKET]: sets $pn (pid) and $ep (endpoint)
start_pn() {
    mkdir -p "$T/$1"
    NOTIFY_SOCKET=${3:-} "$bin/paddock-pn" --set "node.name=$1" --set node.cpus=2 \
        --set node.memory=512MiB --set pn.listen=tcp://127.0.0.1:0 --set "pn.work_dir=$T/$1" \
        --set "pn.stop_mode=$2" --set pn.stop_timeout=20s >"$T/$1.log" 2>&1 &
    pn=$!
    pids="$pids $pn"
    wait_for 10 "$1 to bind" test -s "$T/$1/pn.endpoint"
    ep=$(cat "$T/$1/pn.endpoint")
}

# task ID SCRIPT OUT: a task followed to its end in the background (its statuses in OUT)
task() {
    "$probe" --pn "$ep" --task-id "$1" --sh "$2" --follow --timeout-ms 30000 >"$3" 2>&1 &
    pids="$pids $!"
}

# ---- finish, with the notification socket --------------------------------------------------
"$probe" --notify-socket "$T/notify" --until draining --timeout-ms 30000 >"$T/notify.out" &
npid=$!
pids="$pids $npid"
wait_for 5 "the notify socket" test -S "$T/notify"
start_pn finish finish "$T/notify"
wait_for 10 "READY=1" grep -q "READY=1" "$T/notify.out"
grep -q "^STATUS=" "$T/notify.out" || wait_for 5 "a STATUS line" grep -q "STATUS=" "$T/notify.out"

task a "sleep 1.5; touch '$T/a-done'" "$T/a.out"
wait_for 10 "task a to run" last_line_is "$T/a.out" "running"
kill -TERM $pn
wait_for 5 "STOPPING=1" grep -q "STOPPING=1" "$T/notify.out"
wait_for 5 "a draining status" grep -q "^STATUS=draining" "$T/notify.out"
out=$("$probe" --pn "$ep" --task-id b --marker "$T/b-done" --timeout-ms 3000)
case $out in
*"ERROR -19"*draining*) ;;
*) fail "a task sent while draining was not refused: $out" ;;
esac
kill -0 $pn 2>/dev/null || fail "the PN exited before its running task ended"
wait_for 10 "task a to succeed" last_line_is "$T/a.out" "succeeded"
wait_for 10 "the drained PN to exit" exited $pn
wait $pn
rc=$?
[ $rc = 0 ] || fail "the drained PN exited with $rc"
[ -e "$T/a-done" ] || fail "task a did not finish its work"
[ ! -e "$T/b-done" ] || fail "the refused task ran"
say "finish: READY, STATUS, STOPPING sent; new task refused; running task succeeded; exit 0"

# ---- handback ------------------------------------------------------------------------------
start_pn handback handback
task c "sleep 30; touch '$T/c-done'" "$T/c.out"
wait_for 10 "task c to run" last_line_is "$T/c.out" "running"
kill -TERM $pn
wait_for 5 "task c reported lost" last_line_is "$T/c.out" "lost"
wait_for 5 "the PN to exit" exited $pn
wait $pn
say "handback: running task reported '$(tail -n 1 "$T/c.out")'; the PN exited at once"

# ---- SIGUSR1 drains even in handback mode -----------------------------------------------------
start_pn usr1 handback
task d "sleep 1; touch '$T/d-done'" "$T/d.out"
wait_for 10 "task d to run" last_line_is "$T/d.out" "running"
kill -USR1 $pn
wait_for 10 "task d to succeed" last_line_is "$T/d.out" "succeeded"
wait_for 10 "the drained PN to exit" exited $pn
wait $pn
rc=$?
[ $rc = 0 ] || fail "the PN drained by SIGUSR1 exited with $rc"
[ -e "$T/d-done" ] || fail "task d did not finish its work"
say "SIGUSR1: running task succeeded, then exit 0"
ok=1
