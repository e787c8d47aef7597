#!/bin/sh
# tests/snakemake: Debian's Snakemake runs real workflows on a local Paddock cluster through
# clients/snakemake/paddock, each run as ONE Paddock job (docs/snakemake.md):
#   (a) wordcount: split a text, count words per part, merge, plot (an SVG); outputs checked
#   (b) fanout: 317 jobs in 5 rules with fan-out and fan-in; the result checked
# A second wordcount run is quoted from the first run's profile, and survives its job manager's
# death (SIGKILL once a task is bound).
# Each run's job succeeded with its deadline met, has every task, and `paddock history` shows
# it. Then a failing rule: Snakemake reports the failure with the task's stderr tail.
# Exit 77 (skipped) when snakemake is not installed.
set -eu
BIN=${PADDOCK_BIN_DIR:?}
SRC=${PADDOCK_SOURCE_DIR:?}
if ! command -v snakemake >/dev/null 2>&1; then
    echo "SKIP: snakemake is not installed (tools/install-deps.sh installs Debian's)"
    exit 77
fi
T=$(mktemp -d /tmp/paddock-snk.XXXXXX)
cleanup() {
    "$BIN/paddock" cluster down --dir "$T/c" >/dev/null 2>&1 || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
export PADDOCK="$BIN/paddock" PADDOCK_CLUSTER="$T/c"
# Snakemake 7 polls its cluster jobs every 10 s, every 1 s where CI=true: keep CI time down.
export CI=true
PROFILE="$SRC/clients/snakemake/paddock"

"$BIN/paddock" cluster up --dir "$T/c" --rm 1 --pn 2 --pn-cpus 4 --pn-mem-mb 4096 >/dev/null

# The run's Paddock job: its id from the run's spool, its state through the CLI.
job_of() {
    python3 -c 'import json, glob, sys
runs = glob.glob(sys.argv[1] + "/.snakemake/paddock/*/run.json")
assert len(runs) == 1, runs
print(json.load(open(runs[0]))["job_id"])' "$1"
}
check_job() { # DIR NAME TASKS
    id=$(job_of "$1")
    "$BIN/paddock" job show "$id" --json >"$T/show.json"
    python3 - "$T/show.json" "$2" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["jm"]
name, tasks = sys.argv[2], int(sys.argv[3])
assert d["name"] == name, d["name"]
assert d["state"] == "succeeded", (d["state"], d["reason"])
assert d["tasks_total"] == tasks and d["tasks_succeeded"] == tasks, (d["tasks_total"], d["tasks_succeeded"])
assert d["deadline_met"] is True, d
print("%s: job %s succeeded, %d tasks, makespan %.1f s, deadline %.0f s met"
      % (name, d["job_id"], tasks, d["makespan_s"], d["deadline_s"]))
PY
    "$BIN/paddock" history --json >"$T/history.json"
    python3 - "$T/history.json" "$id" <<'PY'
import json, sys
runs = [r for r in json.load(open(sys.argv[1]))["runs"] if r["job_id"] == sys.argv[2]]
assert len(runs) == 1 and runs[0]["outcome"] == "succeeded" and runs[0]["met"], runs
PY
}

# Polls until the command succeeds (60 s at most).
wait_for() {
    i=0
    until "$@"; do
        i=$((i + 1))
        [ $i -lt 600 ] || fail "timed out waiting for: $*"
        sleep 0.1
    done
}
state_is() { # ID STATE [REASON-WORDS]
    "$BIN/paddock" job show "$1" --json >"$T/open.json" 2>/dev/null || return 1
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1])).get("jm") or {}
sys.exit(0 if d.get("state") == sys.argv[2] and sys.argv[3] in (d.get("reason") or "") else 1)' \
        "$T/open.json" "$2" "${3:-}"
}

# An open job driven by hand: nothing runs until bound; binding c's child b skips a (never
# bound, an ancestor of a bound task); a line naming no task is ignored; statuses appear; the
# job ends when its last task is bound and done. Then the idle rule: an open job that gets no
# binds is cancelled after idle_s.
O="$T/open"
mkdir -p "$O/spool"
cat >"$O/spec.json" <<JSON
{"version": 1, "name": "snk-open", "open": {"spool": "$O/spool", "idle_s": 600}, "tasks": [
 {"id": "a", "cmd": ["sh", "-c", "echo a > $O/a.out"]},
 {"id": "b", "cmd": ["sh", "-c", "echo b > $O/b.out"], "after": ["a"]},
 {"id": "c", "cmd": ["sh", "-c", "echo c > $O/c.out"], "after": ["b"]}]}
JSON
oid=$("$BIN/paddock" submit "$O/spec.json" --deadline 2m)
wait_for state_is "$oid" running
sleep 1
[ ! -e "$O/a.out" ] && [ ! -e "$O/spool/status/a" ] || fail "an open job ran a task nobody bound"
printf 'nosuch\nb\n' >>"$O/spool/binds"
wait_for test -f "$O/spool/status/b"
[ "$(head -n 1 "$O/spool/status/b")" = success ] || fail "status/b: $(cat "$O/spool/status/b")"
[ -f "$O/b.out" ] && [ ! -e "$O/a.out" ] || fail "b did not run, or a (skipped) ran"
printf 'c\n' >>"$O/spool/binds"
wait_for state_is "$oid" succeeded
wait_for test -f "$O/spool/status/c" # written at the JM's next tick, or as it stops
[ "$(cat "$O/spool/status/c")" = success ] && [ -f "$O/c.out" ] || fail "c did not run"
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))["jm"]
assert d["tasks_succeeded"] == 3 and d["attempts_started"] == 2, d' "$T/open.json"
cat >"$O/idle.json" <<JSON
{"version": 1, "name": "snk-idle", "open": {"spool": "$O/idle", "idle_s": 2}, "tasks": [
 {"id": "x", "cmd": ["true"]}]}
JSON
iid=$("$BIN/paddock" submit "$O/idle.json")
wait_for state_is "$iid" cancelled "the workflow stopped submitting"
echo "open job: binds, a skip and statuses; the idle rule cancelled $iid"

# (a) wordcount
W="$T/wordcount"
mkdir -p "$W"
python3 -c 'import random
r = random.Random(26)
words = ["paddock", "snakemake", "deadline", "token", "job", "rule", "task", "node"]
with open("'"$W"'/text.txt", "w") as f:
    for line in range(400):
        f.write(" ".join(r.choice(words) for _ in range(1 + line % 13)) + "\n")'
want=$(wc -w <"$W/text.txt" | tr -d ' ')
PADDOCK_DEADLINE=5m PADDOCK_JOB_NAME=snk-wordcount \
    snakemake -s "$SRC/tests/snakemake/wordcount/Snakefile" -d "$W" --profile "$PROFILE" \
    --jobs 20 >"$T/wordcount.log" 2>&1 || { tail -n 40 "$T/wordcount.log"; fail "wordcount run"; }
[ "$(cat "$W/total.txt")" = "$want" ] || fail "total.txt has $(cat "$W/total.txt"), want $want"
sum=0
for i in 1 2 3 4; do
    n=$(wc -w <"$W/parts/p$i.txt" | tr -d ' ')
    [ "$(cat "$W/counts/c$i.txt")" = "$n" ] || fail "counts/c$i.txt is not the words of part $i"
    [ "$n" -gt 0 ] || fail "part $i is empty"
    sum=$((sum + n))
done
[ "$sum" = "$want" ] || fail "the parts hold $sum words, the text $want"
[ "$(grep -o '<rect' "$W/plot.svg" | wc -l)" = 4 ] || fail "plot.svg has no 4 bars"
python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$W/plot.svg" ||
    fail "plot.svg is not well-formed"
check_job "$W" snk-wordcount 7
grep -q "Submitted job .* with external jobid '.*/status/count\." "$T/wordcount.log" ||
    fail "the count jobs were not bound to the run's job"

# The second run of the same workflow is quoted from the first run's profile; its job manager
# is killed once the first task is bound, and the job resumes (the RM starts a JM again, which
# reads the binds back) and succeeds.
rm -rf "$W/total.txt" "$W/plot.svg" "$W/.snakemake/paddock"
PADDOCK_DEADLINE=5m PADDOCK_JOB_NAME=snk-wordcount \
    snakemake -s "$SRC/tests/snakemake/wordcount/Snakefile" -d "$W" --profile "$PROFILE" \
    --jobs 20 --forceall >"$T/wordcount2.log" 2>&1 &
snk=$!
i=0
until [ -s "$W"/.snakemake/paddock/*/binds ] 2>/dev/null; do
    i=$((i + 1))
    [ $i -lt 600 ] || fail "run 2 bound nothing in 60 s"
    sleep 0.1
done
id=$(job_of "$W")
kill -9 "$(cat "$T/c/jobs/$id/jm.pid")"
wait $snk || { tail -n 40 "$T/wordcount2.log"; fail "wordcount run 2"; }
"$BIN/paddock" job show "$id" --json >"$T/show.json"
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))["jm"]
assert d["resumes"] >= 1 and d["state"] == "succeeded", (d["resumes"], d["state"])
print("snk-wordcount run 2: job %s resumed %d time(s), succeeded" % (d["job_id"], d["resumes"]))' "$T/show.json"
grep -q "paddock-submit: quote: .*from the profile of an earlier run" "$T/wordcount2.log" ||
    fail "the second run was not quoted from the first run's profile"
grep -q "paddock-submit: quote: .*deadline 5m *admitted" "$T/wordcount2.log" ||
    fail "the second run's quote has no verdict for its deadline"
[ "$(cat "$W/total.txt")" = "$want" ] || fail "run 2: total.txt has $(cat "$W/total.txt")"

# (b) fanout: 2N + N/10 + 2 jobs submitted (317 for N = 150; the local rule "all" runs in
# Snakemake). PADDOCK_SNK_N makes it smaller by hand.
N=${PADDOCK_SNK_N:-150}
JOBS=$((2 * N + (N + 9) / 10 + 2))
F="$T/fanout"
mkdir -p "$F"
PADDOCK_DEADLINE=15m PADDOCK_JOB_NAME=snk-fanout \
    snakemake -s "$SRC/tests/snakemake/fanout/Snakefile" -d "$F" --profile "$PROFILE" \
    --config n="$N" --jobs 100 >"$T/fanout.log" 2>&1 || { tail -n 40 "$T/fanout.log"; fail "fanout run"; }
[ "$(cat "$F/final.txt")" = "$(seq 1 "$N" | awk '{s += $1 * $1} END {print s}')" ] ||
    fail "final.txt is $(cat "$F/final.txt")"
check_job "$F" snk-fanout "$JOBS"
[ "$(grep -c "external jobid '.*/status/" "$T/fanout.log")" = "$JOBS" ] ||
    fail "not every fanout job was bound to the run's job"

# A failing rule: the job fails, Snakemake says so, with the task's stderr tail.
X="$T/failing"
mkdir -p "$X"
cat >"$X/Snakefile" <<'SMK'
rule all:
    input: "b.txt"
rule a:
    output: "a.txt"
    shell: "echo made > {output}"
rule b:
    input: "a.txt"
    output: "b.txt"
    shell: "echo 'no such input: paddock-snk-marker' >&2; exit 3"
SMK
if PADDOCK_DEADLINE=5m PADDOCK_JOB_NAME=snk-failing snakemake -s "$X/Snakefile" -d "$X" \
    --profile "$PROFILE" --jobs 4 >"$T/failing.log" 2>&1; then
    fail "a workflow with a failing rule succeeded"
fi
grep -q "paddock: task b\..* failed" "$T/failing.log" || fail "no failure line in Snakemake's log"
grep -q "paddock-snk-marker" "$T/failing.log" || fail "the task's stderr did not reach Snakemake's log"
[ -f "$X/a.txt" ] || fail "rule a did not run"
echo "PASS"
