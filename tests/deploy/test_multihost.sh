#!/bin/sh
# A Paddock cluster on three "hosts": network namespaces joined by a bridge (veth pairs into a
# fourth namespace holding the bridge), addresses 10.250.0.1-3/24. Every host runs an RM replica
# and a PN bound to its own address, with CURVE on. The test checks:
#   - every daemon listens on its host's address and nowhere else (no 127.0.0.1, no wildcard);
#   - a PN told to listen on a non-loopback address without keys refuses to start;
#   - a client whose key is not on the allow-list gets nothing from any RM API or PN (its task
#     never runs), while a user with her own allow-listed key gets answers from each;
#   - an RM leader is elected and the three PNs register across hosts;
#   - a JM on one host runs a real imported workflow (WfCommons) to success while the host of the
#     RM leader is cut off the bridge mid-job: a new leader is elected among the other two, the
#     cut PN goes down, its tasks are placed again, the job finishes;
#   - after the link comes back, the cut replica rejoins and its PN is up again;
#   - `paddock logs` run on each host prints a task's stdout and stderr from the PN that ran
#     it, whichever host that is (issue 25);
#   - the leader's replica stopped with SIGTERM exits 0, another leads, and restarted on its
#     data directory it follows again.
# Traffic stays inside the namespaces. The test removes its namespaces and kills exactly the
# pids it started, also on failure. Skipped (exit 77) where namespaces cannot be made.
set -u
. "$(dirname "$0")/lib.sh"
WAIT_STEP=0.2 # wait_for polls the namespaces every 0.2 s
bin=${PADDOCK_BIN_DIR:?PADDOCK_BIN_DIR is not set}
src=${PADDOCK_SOURCE_DIR:?PADDOCK_SOURCE_DIR is not set}
probe="$bin/deploy_probe"
NET=10.250.0
TIME_SCALE=${PADDOCK_MULTIHOST_TIME_SCALE:-0.02}

skip() {
    echo "SKIP: $*"
    exit 77
}
say() { echo "[multihost $(date +%T)] $*"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

[ "$(id -u)" = 0 ] || skip "creating network namespaces needs root"
command -v ip >/dev/null 2>&1 || skip "no ip command (iproute2)"
command -v ss >/dev/null 2>&1 || skip "no ss command (iproute2)"
for b in paddock paddock-rm paddock-pn paddock-jm deploy_probe; do
    [ -x "$bin/$b" ] || skip "$bin/$b is not built"
done

tag="pdk$$"
T=$(mktemp -d "${TMPDIR:-/tmp}/paddock-multihost.XXXXXX") || exit 1
pids=""
made_ns=""
ok=0

made_user=""

cleanup() {
    kill_pids # a bounded wait, then SIGKILL whatever is left of exactly these pids
    del_netns
    [ -z "$made_user" ] || userdel "$made_user" 2>/dev/null
    [ $ok = 1 ] || tail_logs "$T"/h*/rm.log "$T"/h*/pn.log "$T"/client/jobs/*/jm.log
    if [ $ok = 1 ] || [ -z "${PADDOCK_KEEP_TEST_DIR:-}" ]; then
        rm -rf "$T"
    else
        echo "test directory kept: $T"
    fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# ---- the network: a bridge in its own namespace, one veth pair per host ------------------
netns_hosts 3
say "namespaces $tag-h1..3 on a bridge in $sw: $NET.1-3"

# ---- keys: the cluster's server identity on every host; an intruder nobody allowed -------
"$bin/paddock" keygen --dir "$T/cluster-keys" --name paddock >/dev/null || fail "keygen"
"$bin/paddock" keygen --dir "$T/intruder" --name intruder >/dev/null || fail "keygen intruder"
# the user alice, as docs/deploy.md says: her own certificate, the servers' key as alice.pub,
# her public key installed in every server's allow/ below
mkdir -p "$T/client"
"$bin/paddock" keygen --dir "$T/client/keys" --name alice >/dev/null || fail "keygen alice"
cp "$T/cluster-keys/paddock.pub" "$T/client/keys/alice.pub"
# tasks run as the user who submitted them (issue 27): alice needs a Unix account
if ! id alice >/dev/null 2>&1; then
    useradd -M -s /bin/sh alice 2>/dev/null || skip "cannot create the Unix user alice"
    made_user=alice
fi
chmod 1777 "$T" # alice's tasks (the probe's markers below) write here

ids="1, 2, 3"
raft="$NET.1:7301, $NET.2:7301, $NET.3:7301"
api="tcp://$NET.1:7201, tcp://$NET.2:7201, tcp://$NET.3:7201"
hb="tcp://$NET.1:7202, tcp://$NET.2:7202, tcp://$NET.3:7202"
pub="tcp://$NET.1:7501, tcp://$NET.2:7501, tcp://$NET.3:7501"
cat >"$T/client/cluster.conf" <<EOF
[cluster]
ids = $ids
api = $api
heartbeat = $hb
pub = $pub

[security]
keys_dir = keys
key_name = alice
EOF

for h in 1 2 3; do
    d="$T/h$h"
    mkdir -p "$d"
    cp -r "$T/cluster-keys" "$d/keys"
    cp "$T/client/keys/allow/alice.pub" "$d/keys/allow/alice.pub"
    cat >"$d/rm.conf" <<EOF
[rm]
id = $h
data_dir = $d/rm

[cluster]
ids = $ids
raft = $raft
api = $api
heartbeat = $hb
pub = $pub

[ledger]
virtual_clusters = default=12

[liveness]
suspect_after = 1s
down_after = 3s
pn_heartbeat = 250ms

[security]
keys_dir = $d/keys
EOF
    cat >"$d/pn.conf" <<EOF
[node]
name = pn-$h
rack = rack-$h
cpus = 2
memory = 2048MiB

[pn]
listen = tcp://$NET.$h:7400
work_dir = $d/pn

[rm]
endpoints = $api
heartbeat_endpoints = $hb
heartbeat = 250ms

[security]
keys_dir = $d/keys
EOF
    mkdir -p "$d/pn"
done

# ---- a PN without keys must refuse a non-loopback address --------------------------------
out=$(on 1 timeout 10 "$bin/paddock-pn" --set "pn.listen=tcp://$NET.1:7410" \
    --set "pn.work_dir=$T/h1/nokeys" --set node.name=nokeys --set node.cpus=1 \
    --set node.memory=64MiB 2>&1)
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "a PN on $NET.1 without keys started (exit $rc): $out"
case $out in
*insecure*) ;;
*) fail "the refusal does not say how to override it (--insecure): $out" ;;
esac
on 1 ss -ltnH | grep -q ":7410 " && fail "something listens on :7410 after the refusal"
say "a PN without keys refuses tcp://$NET.1:7410: $out"

# ---- start the daemons -----------------------------------------------------------------------
for h in 1 2 3; do
    # ip netns exec execs the daemon: $! is the daemon's pid
    ip netns exec "$tag-h$h" "$bin/paddock-rm" --config "$T/h$h/rm.conf" --bootstrap \
        >"$T/h$h/rm.log" 2>&1 &
    pids="$pids $!"
    eval "rmpid$h=$!"
done
for h in 1 2 3; do
    ip netns exec "$tag-h$h" "$bin/paddock-pn" --config "$T/h$h/pn.conf" >"$T/h$h/pn.log" 2>&1 &
    pids="$pids $!"
done

status_from() { # status_from HOST: `paddock rm status --json` asked from that host
    on "$1" "$bin/paddock" rm status --cluster "$T/client" --json 2>/dev/null
}
leader_seen_from() { # prints the leader id seen from HOST, fails when there is none
    l=$(status_from "$1" | "$probe" --json leader) || return 1
    case $l in
    [1-9]*) echo "$l" ;;
    *) return 1 ;;
    esac
}
node_state() { # node_state FROM_HOST NODE
    on "$1" "$bin/paddock" nodes --cluster "$T/client" --json 2>/dev/null |
        "$probe" --json "nodes.name=$2.state"
}
node_is() { [ "$(node_state "$1" "$2")" = "$3" ]; }
all_up() { node_is "$1" pn-1 up && node_is "$1" pn-2 up && node_is "$1" pn-3 up; }
# sets min_index to the leader's commit index (polled: a query can fall between leaders)
get_min_index() {
    min_index=$(leader_commit) && [ -n "$min_index" ]
}
# sets the_leader
get_leader() {
    the_leader=$(leader_seen_from $1)
}

wait_for 30 "an RM leader" leader_seen_from 1
wait_for 30 "three PNs up" all_up 1
wait_for 10 "the leader's id" get_leader 1
say "leader: replica $the_leader; pn-1..3 registered and up"

# ---- every daemon binds its host's address, nothing else ----------------------------------
for h in 1 2 3; do
    listeners=$(on $h ss -ltnH | awk '{print $4}')
    for port in 7201 7202 7301 7400 7501; do
        printf '%s\n' "$listeners" | grep -qx "$NET.$h:$port" ||
            fail "host $h: nothing listens on $NET.$h:$port (listeners: $listeners)"
    done
    stray=$(printf '%s\n' "$listeners" | grep -v "^$NET.$h:" || true)
    [ -z "$stray" ] || fail "host $h: listeners outside $NET.$h: $stray"
done
say "every RM and PN listens on its own host address only"

# ---- allow-list: an intruder gets nothing from any server, an allowed client gets answers --
for h in 1 2 3; do
    o=$(on 2 "$probe" --rm "tcp://$NET.$h:7201" --keys "$T/client/keys" --name alice \
        --server-pub "$T/cluster-keys/paddock.pub" --timeout-ms 3000) ||
        fail "allowed client: no answer from the RM API on host $h ($o)"
    o=$(on 2 "$probe" --rm "tcp://$NET.$h:7201" --keys "$T/intruder" --name intruder \
        --server-pub "$T/cluster-keys/paddock.pub" --timeout-ms 1500)
    [ $? = 1 ] || fail "intruder: the RM API on host $h answered ($o)"
    o=$(on 2 "$probe" --pn "tcp://$NET.$h:7400" --keys "$T/intruder" --name intruder \
        --server-pub "$T/cluster-keys/paddock.pub" --marker "$T/intruder-ran-$h" \
        --timeout-ms 1500)
    [ $? = 1 ] || fail "intruder: the PN on host $h answered ($o)"
    o=$(on 2 "$probe" --pn "tcp://$NET.$h:7400" --keys "$T/client/keys" --name alice \
        --server-pub "$T/cluster-keys/paddock.pub" --marker "$T/allowed-ran-$h" \
        --timeout-ms 3000) || fail "allowed client: no answer from the PN on host $h ($o)"
done
for h in 1 2 3; do
    wait_for 10 "the allowed client's task on host $h" test -e "$T/allowed-ran-$h"
    pn_counted() { grep -q '"auth_failures":[1-9]' "$T/h$1/pn/status.json"; }
    wait_for 10 "PN $h to count the refused handshake" pn_counted $h
done
# the intruder's create reached each PN before the allowed one, whose task has run by now
for h in 1 2 3; do
    [ ! -e "$T/intruder-ran-$h" ] || fail "the intruder's task ran on host $h"
done
say "intruder refused by the RM API and the PN on every host; allowed client served"

# ---- a real workflow, and a cut --------------------------------------------------------------
wf=""
for cand in "$src/tests/data/wfcommons/cycles-chameleon-1l-2c-9p-001.json" \
    "$src/../shared/workloads/wfcommons/cycles-chameleon-1l-2c-9p-001.json"; do
    [ -f "$cand" ] && wf=$cand && break
done
[ -n "$wf" ] || fail "no WfCommons instance found under tests/data/wfcommons"
"$bin/paddock" import wfcommons "$wf" -o "$T/job.json" --time-scale "$TIME_SCALE" \
    --max-cpu 1 --max-mem-mb 256 >/dev/null || fail "paddock import wfcommons $wf"

wait_for 10 "a leader before the job" get_leader 1
cut=$the_leader
jmh=$((cut % 3 + 1)) # the JM runs on a host that stays connected
job=$(on $jmh "$bin/paddock" submit "$T/job.json" --cluster "$T/client" 2>"$T/submit.err") ||
    fail "paddock submit: $(cat "$T/submit.err")"
jobdir="$T/client/jobs/$job"
[ -f "$jobdir/jm.pid" ] && pids="$pids $(cat "$jobdir/jm.pid")"
# submit returns once the JM is started (jm.pid); its state.json comes with its first round
wait_for 20 "the JM's state.json" test -s "$jobdir/state.json"
total=$("$probe" --json tasks_total <"$jobdir/state.json" 2>/dev/null || echo "?")
say "job $job ($(basename "$wf"), $total tasks, time scale $TIME_SCALE) runs with its JM on host $jmh"

succeeded() { "$probe" --json tasks_succeeded <"$jobdir/state.json" 2>/dev/null; }
some_done() {
    n=$(succeeded) || return 1
    [ "$n" -ge 15 ]
}
wait_for 60 "the job to make progress" some_done
state=$("$probe" --json state <"$jobdir/state.json")
[ "$state" = running ] || fail "the job is $state before the cut; raise the time scale"

ip -n "$sw" link set "p$cut" down
t_cut=$(now_ms)
say "cut host $cut (the RM leader's) off the bridge with $(succeeded) tasks done"

new_leader() {
    l=$(leader_seen_from $jmh) || return 1
    [ "$l" != "$cut" ]
}
wait_for 15 "a new leader among the connected replicas" new_leader
say "new leader seen $(($(now_ms) - t_cut)) ms after the cut: replica $(leader_seen_from $jmh)"
wait_for 20 "pn-$cut to be down" node_is $jmh "pn-$cut" down
say "pn-$cut is down in the RM's view $(($(now_ms) - t_cut)) ms after the cut"

ended() {
    s=$("$probe" --json state <"$jobdir/state.json" 2>/dev/null) || return 1
    [ "$s" != running ] && [ "$s" != starting ]
}
wait_for 180 "the job to end" ended
state=$("$probe" --json state <"$jobdir/state.json")
[ "$state" = succeeded ] ||
    fail "the job ended $state: $("$probe" --json reason <"$jobdir/state.json")"
n=$(succeeded)
[ "$n" = "$total" ] || fail "$n of $total tasks succeeded"
wait_for 10 "report.json" test -s "$jobdir/report.json"
lost=$(grep -o '"state": *"lost"' "$jobdir/report.json" | wc -l)
on_cut=$(grep -o "\"node\": *\"pn-$cut\"" "$jobdir/report.json" | wc -l)
say "job succeeded: $n/$total tasks; $on_cut attempts on pn-$cut, $lost attempts lost"
wait_for 5 "a leader still" new_leader

# commit index of the current leader, asked from the JM's host
leader_commit() {
    l=$(leader_seen_from $jmh) || return 1
    on $jmh "$bin/paddock" rm status --rm "tcp://$NET.$l:7201" --keys "$T/cluster-keys" \
        --json 2>/dev/null | "$probe" --json replicas.0.commit_index
}
# replica $cut follows a leader and has applied at least $min_index
role_of_cut() {
    st=$(on $jmh "$bin/paddock" rm status --rm "tcp://$NET.$cut:7201" --keys "$T/cluster-keys" \
        --json 2>/dev/null) || return 1
    r=$(printf '%s' "$st" | "$probe" --json replicas.0.role) || return 1
    l=$(printf '%s' "$st" | "$probe" --json replicas.0.leader.id) || return 1
    a=$(printf '%s' "$st" | "$probe" --json replicas.0.last_applied) || return 1
    { [ "$r" = follower ] || [ "$r" = leader ]; } && [ "$l" -gt 0 ] && [ "$a" -ge "$min_index" ]
}


# ---- heal: the cut replica comes back as a follower, its PN is up again --------------------
wait_for 10 "the leader's commit index" get_min_index
ip -n "$sw" link set "p$cut" up
# Raft's TCP connects to and from the cut host started during the cut; the kernel retries their
# SYNs with exponential backoff (1, 2, 4, 8, 16, 32 s), so after a long cut the link may be used
# again only half a minute after it is back.
wait_for 60 "the cut replica to rejoin and apply up to $min_index" role_of_cut
wait_for 20 "pn-$cut up again" node_is $jmh "pn-$cut" up
say "host $cut rejoined: its replica follows and applied the log up to $min_index, pn-$cut is up"

# ---- paddock logs from every host: a task's output from the PN that ran it (issue 25) ------
# The CLI finds the node in the job's report and its endpoint in the RM's view, and reads over
# CURVE with the client's key; from at least two of the three hosts the PN is on another host.
cat >"$T/say.json" <<'EOF'
{"version": 1, "name": "say", "tasks": [
  {"id": "say", "cmd": ["sh", "-c", "echo out-line; echo err-line >&2"], "runtime_s": 0.1}]}
EOF
sjob=$(on $jmh "$bin/paddock" submit "$T/say.json" --cluster "$T/client" 2>"$T/say.err") ||
    fail "paddock submit say.json: $(cat "$T/say.err")"
sdir="$T/client/jobs/$sjob"
[ -f "$sdir/jm.pid" ] && pids="$pids $(cat "$sdir/jm.pid")"
say_done() { [ "$("$probe" --json state <"$sdir/state.json" 2>/dev/null)" = succeeded ]; }
wait_for 30 "job $sjob (say.json) to succeed" say_done
wait_for 10 "its report.json" test -s "$sdir/report.json"
ran_on=$(grep -o '"node": *"pn-[0-9]"' "$sdir/report.json" | head -n 1 | grep -o 'pn-[0-9]')
for h in 1 2 3; do
    o=$(on $h "$bin/paddock" logs "$sjob" say --cluster "$T/client" 2>&1) ||
        fail "paddock logs on host $h (the task ran on $ran_on): $o"
    [ "$o" = out-line ] || fail "paddock logs on host $h printed '$o', want out-line"
    o=$(on $h "$bin/paddock" logs "$sjob" say --stderr --cluster "$T/client" 2>&1) ||
        fail "paddock logs --stderr on host $h (the task ran on $ran_on): $o"
    [ "$o" = err-line ] || fail "paddock logs --stderr on host $h printed '$o', want err-line"
done
say "paddock logs on hosts 1-3 read the task's stdout and stderr from $ran_on"

# ---- a replica leaves cleanly and comes back ----------------------------------------------
# SIGTERM to the leader's replica (what systemctl stop sends): it exits 0 at once, the others
# elect a leader, and the replica restarted on its data directory (no --bootstrap) follows.
wait_for 10 "a leader before stopping a replica" get_leader $jmh
gone=$the_leader
wait_for 10 "the leader's commit index" get_min_index
eval "gpid=\$rmpid$gone"
kill -TERM "$gpid"
t_term=$(now_ms)
wait_for 10 "replica $gone to exit after SIGTERM" exited "$gpid"
wait "$gpid"
rc=$?
[ $rc = 0 ] || fail "replica $gone exited with status $rc after SIGTERM"
t_exit=$(($(now_ms) - t_term))
other_leader() {
    l=$(leader_seen_from $jmh) || return 1
    [ "$l" != "$gone" ]
}
wait_for 10 "a leader after replica $gone left" other_leader
say "replica $gone stopped cleanly (exit 0 within $t_exit ms); another leader seen $(($(now_ms) - t_term)) ms after SIGTERM"
ip netns exec "$tag-h$gone" "$bin/paddock-rm" --config "$T/h$gone/rm.conf" \
    >>"$T/h$gone/rm.log" 2>&1 &
pids="$pids $!"
cut=$gone
wait_for 20 "replica $gone to rejoin after its restart" role_of_cut
say "replica $gone restarted on its data directory, follows, applied up to $min_index"

ok=1
say "PASS"
