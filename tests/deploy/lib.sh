# lib.sh - helpers the deploy tests share (sourced: . "$(dirname "$0")/lib.sh").
#   fail MSG...                   print "FAIL: MSG" and exit 1 (the test's EXIT trap cleans up)
#   exited PID                    true once PID no longer runs
#   wait_for SECONDS WHAT CMD...  poll CMD every $WAIT_STEP seconds (default 0.05) until it
#                                 succeeds; fail after SECONDS naming WHAT

fail() {
    echo "FAIL: $*"
    exit 1
}

exited() { ! kill -0 "$1" 2>/dev/null; }

wait_for() {
    limit=$1
    what=$2
    shift 2
    end=$(($(date +%s) + limit))
    while ! "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -lt $end ] || fail "timed out after ${limit}s waiting for $what"
        sleep "${WAIT_STEP:-0.05}"
    done
}

# The multi-host tests' shared parts; each uses the caller's variables $tag (a name prefix),
# $NET (the first three octets of the hosts' /24), $pids and $made_ns.
#   on HOST CMD...                run CMD inside host HOST's namespace ($tag-hHOST)
#   netns_hosts N                 N "hosts" $NET.1..N: namespaces joined by a bridge in a
#                                 namespace of its own ($tag-sw), recorded in $made_ns; skips
#                                 the test (exit 77) where namespaces cannot be made
#   kill_pids                     SIGTERM every pid in $pids, up to 5 s, then SIGKILL the rest
#   del_netns                     removes every namespace in $made_ns
#   tail_logs FILE...             prints the last lines of each FILE that exists

on() {
    h=$1
    shift
    ip netns exec "$tag-h$h" "$@"
}

netns_hosts() {
    sw="$tag-sw"
    if ! ip netns add "$sw" 2>/dev/null; then
        echo "SKIP: cannot create a network namespace (ip netns add failed)"
        exit 77
    fi
    made_ns="$sw"
    ip -n "$sw" link set lo up
    if ! ip -n "$sw" link add br0 type bridge; then
        echo "SKIP: cannot create a bridge in a namespace"
        exit 77
    fi
    ip -n "$sw" link set br0 up
    h=1
    while [ "$h" -le "$1" ]; do
        ip netns add "$tag-h$h" || fail "ip netns add $tag-h$h"
        made_ns="$made_ns $tag-h$h"
        if ! ip -n "$sw" link add "p$h" type veth peer name eth0 netns "$tag-h$h"; then
            echo "SKIP: cannot create veth pairs across namespaces"
            exit 77
        fi
        ip -n "$sw" link set "p$h" master br0
        ip -n "$sw" link set "p$h" up
        ip -n "$tag-h$h" link set lo up
        ip -n "$tag-h$h" addr add "$NET.$h/24" dev eth0
        ip -n "$tag-h$h" link set eth0 up
        h=$((h + 1))
    done
}

kill_pids() {
    for p in $pids; do
        kill -TERM "$p" 2>/dev/null
    done
    i=0
    while [ $i -lt 50 ]; do
        alive=""
        for p in $pids; do
            kill -0 "$p" 2>/dev/null && alive="$alive $p"
        done
        [ -z "$alive" ] && break
        sleep 0.1
        i=$((i + 1))
    done
    for p in $pids; do
        kill -KILL "$p" 2>/dev/null
    done
}

del_netns() {
    for ns in $made_ns; do
        ip netns del "$ns" 2>/dev/null
    done
}

tail_logs() {
    for f in "$@"; do
        [ -f "$f" ] || continue
        echo "---- last lines of $f"
        tail -n 15 "$f"
    done
}
