#!/bin/sh
# check_symbols.sh PADDOCK_SIM LIBPN LIBJM SIM_OBJECT_DIR
# "The simulator's modules are the daemons' modules", shown by the build: every policy function
# the simulator drives is defined exactly once in paddock-sim, that definition comes from the
# static libraries the daemons link (libpaddock_pn.a, libpaddock_jm.a), and no object compiled
# from tools/sim defines a symbol of those modules (no second implementation).
set -u
sim=$1 libpn=$2 libjm=$3 objdir=$4
fail=0
NM=${NM:-nm}

check() { # symbol library
    sym=$1 lib=$2
    if ! "$NM" --defined-only "$lib" 2>/dev/null | grep -Eq " [Tt] $sym\$"; then
        echo "FAIL: $sym is not defined in $(basename "$lib")"
        fail=1
        return
    fi
    n=$("$NM" --defined-only "$sim" | grep -Ec " [Tt] $sym\$")
    if [ "$n" -ne 1 ]; then
        echo "FAIL: $sym defined $n times in paddock-sim"
        fail=1
        return
    fi
    echo "ok: $sym in paddock-sim comes from $(basename "$lib")"
}

for s in queue_push queue_pick queue_finish queue_preempt queue_simulate matrix_compute \
         matrix_lookup loadprof_fit; do
    check "$s" "$libpn"
done
for s in matcher_stable matcher_candidates place_round estimator_estimate estimator_observe \
         dispatch_place dispatch_upgrades dag_start dag_succeed priority_sort view_update \
         view_set_matrix controller_step progress_eval jsim_plan_task_expected \
         attempt_step attempt_downgrades attempt_upgrades; do
    check "$s" "$libjm"
done

# No object built from tools/sim defines a pn/ or jm/ module function.
objs=$(find "$objdir" -name '*.o' 2>/dev/null)
if [ -z "$objs" ]; then
    echo "FAIL: no simulator objects under $objdir"
    fail=1
fi
for o in $objs; do
    dup=$("$NM" --defined-only "$o" | awk '$2 ~ /^[TtDdBb]$/ {print $3}' |
          grep -E '^(queue|matrix|loadprof|matcher|place|estimator|dispatch|dag|priority|view|spec|controller|progress|jsim|attempt|utility)_' || true)
    if [ -n "$dup" ]; then
        echo "FAIL: $(basename "$o") defines policy symbols: $dup"
        fail=1
    fi
done
[ -n "$objs" ] && echo "ok: $(echo "$objs" | wc -l) simulator objects define no pn/ or jm/ symbol"

if [ "$fail" -ne 0 ]; then
    exit 1
fi
exit 0
