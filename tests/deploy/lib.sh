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
