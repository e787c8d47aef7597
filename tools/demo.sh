#!/usr/bin/env bash
# The main command: on a fresh Debian 12 machine, sets up and builds Paddock, starts a local
# cluster (3 RM replicas, 4 process nodes), imports a real scientific workflow recorded by
# WfCommons, asks the RM whether its deadline can be admitted (paddock quote; when not, it takes
# the earliest feasible finish instead), runs it while showing progress and the ETA, renders the
# job's report, and stops the cluster (also on Ctrl-C or failure).
#
#   tools/demo.sh
#
# Settings (environment):
#   DEMO_DIR          where the cluster, the spec and the report go (default ./demo)
#   DEMO_WORKFLOW     a WfCommons instance (default tests/data/wfcommons/epigenomics-...json)
#   DEMO_TIME_SCALE   factor on the recorded task runtimes (default 0.01: hours become seconds)
#   DEMO_DEADLINE     the job's deadline (default 45s)
#   DEMO_KEEP=1       leave the cluster running at the end (stop it with paddock cluster down)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

demo_dir=${DEMO_DIR:-$root/demo}
workflow=${DEMO_WORKFLOW:-tests/data/wfcommons/epigenomics-chameleon-ilmn-2seq-100k-001.json}
scale=${DEMO_TIME_SCALE:-0.01}
deadline=${DEMO_DEADLINE:-45s}
build=build

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# 1. Dependencies and build (the same build directory as tools/test.sh, without the tests).
say "installing what is missing and building (in $build/)"
PADDOCK_WITH_BROWSER=${PADDOCK_WITH_BROWSER:-0} tools/install-deps.sh
cmake -S . -B "$build" >/dev/null
if ! cmake --build "$build" -j"$(nproc)" >"$build/build.log" 2>&1; then
    grep -vE '^\[ *[0-9]+%\]' "$build/build.log" >&2
    echo "demo: build failed (full log in $build/build.log)" >&2
    exit 1
fi
bin=$root/$build/bin
paddock=$bin/paddock

# 2. A fresh local cluster, stopped again however the demo ends.
cluster=$demo_dir/cluster
mkdir -p "$demo_dir"
if [ -f "$cluster/cluster.conf" ]; then
    "$paddock" cluster down --dir "$cluster" >/dev/null 2>&1 || true
    rm -rf "$cluster"
fi
export PADDOCK_CLUSTER=$cluster

stop_jms() {
    # job managers this demo's submissions started (only those still running paddock-jm)
    for f in "$cluster"/jobs/*/jm.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f" 2>/dev/null || true)
        if [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q paddock-jm; then
            kill "$pid" 2>/dev/null || true
        fi
    done
}
cleanup() {
    status=$?
    trap - EXIT INT TERM
    if [ "${DEMO_KEEP:-0}" = 1 ] && [ "$status" = 0 ]; then
        echo "cluster left running in $cluster (stop it: $paddock cluster down --dir $cluster)"
        exit 0
    fi
    if [ -f "$cluster/cluster.conf" ]; then
        say "stopping the cluster"
        stop_jms
        "$paddock" cluster down --dir "$cluster" || true
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'echo; echo "demo: interrupted" >&2; exit 130' INT TERM

say "starting a local cluster: 3 RM replicas (Raft), 4 process nodes (2 cores, 2 GiB each)"
"$paddock" cluster up --dir "$cluster" --rm 3 --pn 4 --pn-cpus 2 --pn-mem-mb 2048 --racks 2
"$paddock" rm status
echo
"$paddock" nodes

if [ ! -x "$bin/paddock-jm" ]; then
    say "paddock-jm is not built yet"
    echo "The job manager daemon does not exist in this tree yet, so the demo stops here:"
    echo "the cluster above started, elected an RM leader and registered every node."
    exit 0
fi

# 3. A real workflow, scaled so it runs in seconds.
name=$(basename "$workflow" .json)
spec=$demo_dir/$name.json
say "importing the WfCommons workflow $name (recorded runtimes x $scale)"
"$paddock" import wfcommons "$workflow" -o "$spec" --time-scale "$scale" --min-runtime 0.01 \
    --max-cpu 1 --max-mem-mb 1024 --name "${name%%-chameleon*}"

# 4. Ask the RM whether the deadline can be admitted; if not, take its earliest feasible finish.
say "asking the RM whether a deadline of $deadline fits (paddock quote)"
quote_status=0
quote=$("$paddock" quote "$spec" --deadline "$deadline") || quote_status=$?
printf '%s\n' "$quote"
if [ "$quote_status" -eq 3 ]; then
    earliest=$(printf '%s\n' "$quote" | sed -n 's/^  earliest finish \([0-9][^ ]*\) .*/\1/p')
    if [ -n "$earliest" ]; then
        echo "demo: $deadline would be refused; submitting with the earliest feasible finish"
        deadline=$earliest
    fi
fi

# 5. Submit with a deadline and follow it.
say "submitting it with a deadline of $deadline"
job_status=0
"$paddock" submit "$spec" --deadline "$deadline" --wait || job_status=$?
# a fresh cluster: the only job directory is this job's
job=$(ls "$cluster/jobs" 2>/dev/null | head -n1)

# 6. The report.
if [ -n "$job" ] && [ -f "$cluster/jobs/$job/report.json" ]; then
    say "rendering the report"
    "$paddock" report "$job" --cluster "$cluster" -o "$demo_dir/report.html"
    "$paddock" job show "$job"
    echo
    echo "report:      $demo_dir/report.html  (open it in a browser; it needs no network)"
    echo "job files:   $cluster/jobs/$job/ (spec.json, jm.log, journal, report.json)"
else
    echo "demo: no report for the job (see $cluster/jobs/*/jm.log)" >&2
    job_status=1
fi
exit "$job_status"
