#!/usr/bin/env bash
# Chaos run (issue 14; not in CI): for MINUTES minutes, jobs run continuously on a local cluster
# (3 RM replicas, 3 PNs of 2 cores) while the RM leader, a PN or a job manager is killed with
# SIGKILL at random; what was killed is started again with `paddock cluster up --dir` (a JM is
# started again by the RM leader itself, [jobs] relaunch). Each task appends "JOB:TASK ATTEMPT
# NODE" to one marks file. At the end it stops submitting, waits for the jobs to finish, stops
# the cluster and prints:
#   jobs submitted, succeeded, failed (and any left unfinished),
#   tasks rerun after a success  (a success recorded, in the job's journal, and the task run
#                                 again: must be 0),
#   run again, node lost         (a task marked twice whose first run's success was never
#                                 recorded: it finished in the moment its PN was killed, before
#                                 the PN could report it; tasks die with their PN otherwise),
#   tasks lost                   (a task of a succeeded job with no mark: must be 0),
#   orphan processes left        (task processes alive after the cluster is down: must be 0).
# Each duplicate is listed in chaos.log with its marks and its journal lines.
# Exits 0 when reruns after a success, lost tasks and orphans are 0 and no job failed or was left
# unfinished, else 1.
#
#   tools/chaos.sh MINUTES [DIR]
#
# DIR (default a new /tmp/paddock-chaos-XXXXXX) holds the cluster, the specs, the marks and
# chaos.log (every kill, with its time). Settings (environment):
#   PADDOCK_BIN_DIR   where paddock and the daemons are (default build/bin of this checkout)
#   CHAOS_SEED        seed of the random choices (default: the time; printed)
#   CHAOS_KILL_MIN    / CHAOS_KILL_MAX: seconds between two kills (default 5 / 20)
#   CHAOS_JOBS        jobs running at once (default 3)
#   CHAOS_JM_KILLS    kills of one job's JM at most (default 2: the RM gives a job up after
#                     jobs.restart_max = 3 restarts, which would fail it by design)
#   CHAOS_DRAIN_S     how long to wait for the last jobs at the end (default 300)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

minutes=${1:-}
if ! [[ "$minutes" =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
    echo "usage: tools/chaos.sh MINUTES [DIR]" >&2
    exit 2
fi
dir=${2:-}
if [ -z "$dir" ]; then
    dir=$(mktemp -d /tmp/paddock-chaos-XXXXXX)
else
    mkdir -p "$dir"
fi
dir=$(cd "$dir" && pwd)
bin=${PADDOCK_BIN_DIR:-$root/build/bin}
paddock=$bin/paddock
for b in paddock paddock-rm paddock-pn paddock-jm; do
    if [ ! -x "$bin/$b" ]; then
        echo "chaos: $bin/$b not found (build first, or set PADDOCK_BIN_DIR)" >&2
        exit 2
    fi
done
cluster=$dir/cluster
marks=$dir/marks
log=$dir/chaos.log
export PADDOCK_CLUSTER=$cluster
seed=${CHAOS_SEED:-$(date +%s)}
RANDOM=$seed
kill_min=${CHAOS_KILL_MIN:-5}
kill_max=${CHAOS_KILL_MAX:-20}
max_jobs=${CHAOS_JOBS:-3}
jm_kills_max=${CHAOS_JM_KILLS:-2}
drain_s=${CHAOS_DRAIN_S:-300}

say() { printf '%s %s\n' "$(date +%T)" "$*" | tee -a "$log"; }

# A field of a JSON file or text: "key": value (strings without quotes).
jfield() {
    sed -n "s/.*\"$1\": *\"\{0,1\}\([^\",}]*\)\"\{0,1\}.*/\1/p" | head -n 1
}

# The pid in a pid file when it runs a paddock binary whose name starts with $2, else nothing.
live_pid() {
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 1
    [ -n "$pid" ] || return 1
    [ "$(cut -c1-"${#2}" 2>/dev/null <"/proc/$pid/comm")" = "$2" ] || return 1
    grep -q '^State:[[:space:]]*[ZX]' "/proc/$pid/status" 2>/dev/null && return 1
    echo "$pid"
}

# Pids of live task processes of this cluster (their environment names a task directory here).
task_pids() {
    local p
    for p in /proc/[0-9]*; do
        [ "${p#/proc/}" = "$$" ] && continue
        if tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -q "^PADDOCK_TASK_DIR=$cluster/"; then
            grep -q '^State:[[:space:]]*[ZX]' "$p/status" 2>/dev/null || echo "${p#/proc/}"
        fi
    done
}

stop_jms() {
    local f pid
    for f in "$cluster"/jobs/*/jm.pid; do
        [ -f "$f" ] || continue
        if pid=$(live_pid "$f" paddock-jm); then kill "$pid" 2>/dev/null; fi
    done
}

stopped=0
stop_all() {
    [ "$stopped" = 1 ] && return
    stopped=1
    stop_jms
    "$paddock" cluster down --dir "$cluster" >/dev/null 2>&1
    sleep 2
    stop_jms # a JM the RM started again between the two
}
on_signal() {
    say "interrupted: stopping the cluster"
    stop_all
    exit 130
}
trap on_signal INT TERM

say "chaos: $minutes min in $dir (seed $seed, bin $bin)"
if ! "$paddock" cluster up --dir "$cluster" --rm 3 --pn 3 --pn-cpus 2 --pn-mem-mb 2048 \
    >>"$log" 2>&1; then
    echo "chaos: cluster up failed (see $log and $cluster/*.log)" >&2
    stop_all
    exit 1
fi
: >"$marks"

# A job of 10 to 38 tasks in three stages (b after a, c after b), each sleeping 0.2 to 0.9 s
# then appending "JOB:TASK ATTEMPT NODE" to the marks.
write_spec() {
    local name=$1 path=$2 na nb nc n i sep="" t var
    na=$((4 + RANDOM % 12))
    nb=$((4 + RANDOM % 16))
    nc=$((2 + RANDOM % 10))
    {
        printf '{"version": 1, "name": "%s",\n "stages": [{"name": "a"}, ' "$name"
        printf '{"name": "b", "after": ["a"]}, {"name": "c", "after": ["b"]}],\n "tasks": [\n'
        for st in a b c; do
            var=n$st
            n=${!var}
            for ((i = 0; i < n; i++)); do
                t=$(printf '0.%d' $((2 + RANDOM % 8)))
                printf '%s  {"id": "%s-%d", "stage": "%s", "cmd": ["sh", "-c", ' "$sep" "$st" "$i" "$st"
                # shellcheck disable=SC2016 # expanded by the task's shell
                printf '"sleep %s; echo \\"$PADDOCK_JOB_ID:$PADDOCK_TASK_ID $PADDOCK_ATTEMPT $PADDOCK_NODE\\" >> %s"], ' "$t" "$marks"
                printf '"cpu": 1, "mem_mb": 64, "runtime_s": %s}' "$t"
                sep=$',\n'
            done
        done
        printf '\n ]}\n'
    } >"$path"
    echo $((na + nb + nc)) >"$path.tasks"
}

submitted=0
declare -A jm_kills=()
jobs_file=$dir/jobs.txt
: >"$jobs_file"

job_state() { jfield state <"$cluster/jobs/$1/state.json" 2>/dev/null; }

running_jobs() {
    local id n=0 s
    while read -r id; do
        s=$(job_state "$id")
        case "$s" in succeeded | failed | cancelled) ;; *) n=$((n + 1)) ;; esac
    done <"$jobs_file"
    echo "$n"
}

submit_one() {
    local name spec id
    name=chaos-$submitted
    spec=$dir/specs/$name.json
    mkdir -p "$dir/specs"
    write_spec "$name" "$spec"
    if id=$("$paddock" submit "$spec" 2>>"$log"); then
        id=$(echo "$id" | head -n 1)
        echo "$id" >>"$jobs_file"
        submitted=$((submitted + 1))
        say "submitted $id ($name, $(cat "$spec.tasks") tasks)"
    else
        # an RM failing over answers late or not at all: counted only once registered
        say "submit of $name refused or failed (see $log)"
        sleep 1
    fi
}

cluster_up_again() {
    if ! "$paddock" cluster up --dir "$cluster" >>"$log" 2>&1; then
        say "cluster up failed; retrying"
        sleep 2
        "$paddock" cluster up --dir "$cluster" >>"$log" 2>&1 || say "cluster up failed again"
    fi
}

kill_something() {
    local what=$((RANDOM % 3)) pid leader i f id
    case $what in
    0) # the RM leader
        leader=$("$paddock" rm status --json 2>/dev/null | jfield leader)
        if [ -n "$leader" ] && pid=$(live_pid "$cluster/rm-$leader.pid" paddock-rm); then
            kill -KILL "$pid"
            say "killed the RM leader rm-$leader (pid $pid)"
            sleep 1
            cluster_up_again
            return
        fi
        say "no RM leader to kill right now"
        ;;
    1) # a PN
        i=$((1 + RANDOM % 3))
        if pid=$(live_pid "$cluster/pn-$i.pid" paddock-pn); then
            kill -KILL "$pid"
            say "killed pn-$i (pid $pid)"
            sleep 1
            cluster_up_again
            return
        fi
        say "pn-$i not running"
        ;;
    2) # the JM of a running job, each job at most jm_kills_max times
        local cands=()
        while read -r id; do
            f=$cluster/jobs/$id/jm.pid
            [ "${jm_kills[$id]:-0}" -lt "$jm_kills_max" ] || continue
            case "$(job_state "$id")" in succeeded | failed | cancelled) continue ;; esac
            live_pid "$f" paddock-jm >/dev/null && cands+=("$id")
        done <"$jobs_file"
        if [ "${#cands[@]}" -gt 0 ]; then
            id=${cands[$((RANDOM % ${#cands[@]}))]}
            if pid=$(live_pid "$cluster/jobs/$id/jm.pid" paddock-jm); then
                kill -KILL "$pid"
                jm_kills[$id]=$((${jm_kills[$id]:-0} + 1))
                say "killed the JM of $id (pid $pid; the RM starts it again)"
                return
            fi
        fi
        say "no JM to kill right now"
        ;;
    esac
}

start=$(date +%s)
end=$((start + $(awk -v m="$minutes" 'BEGIN { print int(m * 60) }')))
next_kill=$((start + kill_min + RANDOM % (kill_max - kill_min + 1)))
kills=0
while [ "$(date +%s)" -lt "$end" ]; do
    if [ "$(running_jobs)" -lt "$max_jobs" ]; then
        submit_one
    fi
    if [ "$(date +%s)" -ge "$next_kill" ]; then
        kill_something
        kills=$((kills + 1))
        next_kill=$(($(date +%s) + kill_min + RANDOM % (kill_max - kill_min + 1)))
    fi
    sleep 0.5
done

say "time is up after $kills kills: waiting up to $drain_s s for the jobs to finish"
cluster_up_again # whatever the last kill took down
drain_end=$(($(date +%s) + drain_s))
while [ "$(running_jobs)" -gt 0 ] && [ "$(date +%s)" -lt "$drain_end" ]; do
    sleep 1
done

succeeded=0 failed=0 unfinished=0 lost=0
while read -r id; do
    case "$(job_state "$id")" in
    succeeded)
        succeeded=$((succeeded + 1))
        # every task of a succeeded job left its mark
        spec=$cluster/jobs/$id/spec.json
        for t in $(grep -o '"id": *"[a-c]-[0-9]*"' "$spec" | sed 's/.*"\([a-c]-[0-9]*\)"/\1/'); do
            grep -q "^$id:$t " "$marks" || {
                lost=$((lost + 1))
                say "lost: $id:$t has no mark"
            }
        done
        ;;
    failed | cancelled)
        failed=$((failed + 1))
        say "failed: $id: $(jfield reason <"$cluster/jobs/$id/state.json")"
        ;;
    *)
        unfinished=$((unfinished + 1))
        say "unfinished: $id ($(job_state "$id"))"
        ;;
    esac
done <"$jobs_file"

# Tasks marked more than once. A rerun after a success: the journal records two successes.
# Otherwise the first run was never recorded: it was in flight when its PN was killed (its
# process group outlives the PN and may finish before the PN's next boot kills it).
ndup=0 nsucc2=0 nunrec=0
while read -r n line; do
    [ -n "$line" ] || continue
    ndup=$((ndup + n - 1))
    id=${line%%:*} t=${line#*:}
    j=$cluster/jobs/$id/journal
    ok=$(grep -c "\"task\":\"$t\".*\"state\":\"succeeded\"" "$j" 2>/dev/null)
    if [ "${ok:-0}" -ge 2 ]; then
        nsucc2=$((nsucc2 + n - 1))
        kind="two successes journaled"
    else
        nunrec=$((nunrec + n - 1))
        kind="a run never recorded"
    fi
    say "twice: $line ($kind): marks [$(grep "^$line " "$marks" | cut -d' ' -f2- | tr '\n' ';')]" \
        "journal [$(grep "\"task\":\"$t\"" "$j" 2>/dev/null |
            sed -n 's/.*"attempt":\([0-9]*\).*"node":"\([^"]*\)".*"state":"\([a-z]*\)".*"exit":\(-\{0,1\}[0-9]*\).*/\1 \2 \3 exit \4/p' |
            tr '\n' ';')]"
done < <(cut -d' ' -f1 "$marks" | sort | uniq -c | awk '$1 > 1 { print $1, $2 }')

stop_all
sleep 1
orphans=$(task_pids | wc -l)
if [ "$orphans" -gt 0 ]; then
    say "orphan task processes: $(task_pids | tr '\n' ' ')"
    for p in $(task_pids); do kill -KILL "$p" 2>/dev/null; done
fi

{
    echo
    echo "chaos: $minutes min, seed $seed, $kills kills (see $log)"
    echo "  jobs submitted               $submitted"
    echo "  jobs succeeded               $succeeded"
    echo "  jobs failed                  $failed"
    [ "$unfinished" -gt 0 ] && echo "  jobs unfinished              $unfinished"
    echo "  tasks rerun after a success  $nsucc2"
    echo "  run again, node lost         $nunrec (first run finished as its PN was killed, unrecorded)"
    echo "  duplicated marks in all      $ndup"
    echo "  tasks lost                   $lost"
    echo "  orphan processes left        $orphans"
} | tee -a "$log"
[ "$nsucc2" = 0 ] && [ "$lost" = 0 ] && [ "$orphans" = 0 ] && [ "$failed" = 0 ] &&
    [ "$unfinished" = 0 ]
