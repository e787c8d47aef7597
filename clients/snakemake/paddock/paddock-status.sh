#!/bin/sh
# Snakemake's --cluster-status command for Paddock: paddock-status.sh EXTERNAL_ID prints
# running, success or failed (docs/snakemake.md). One small file read per poll:
#   SPOOL/status/TASK   a task of the run's open job: the job manager writes the file once the
#                       task's fate is known ("success", or "failed" and the reason); none yet:
#                       running
#   job:JOBDIR:ERRFILE  a Paddock job of its own: the "state" in JOBDIR/state.json
# On failure the reason and the tail of the task's stderr go to stderr (Snakemake's log).
id=$1
case $id in
job:*)
    dir=${id#job:}
    err=${dir#*:}
    dir=${dir%%:*}
    state=$(sed -n 's/.*"state":"\([a-z]*\)".*/\1/p' "$dir/state.json" 2>/dev/null)
    case $state in
    succeeded) echo success ;;
    failed | cancelled)
        echo failed
        reason=$(sed -n 's/.*"reason":"\([^"]*\)".*/\1/p' "$dir/state.json" 2>/dev/null)
        echo "paddock: job ${dir##*/} $state: $reason" >&2
        if [ -s "$err" ]; then
            echo "paddock: the last lines of its stderr ($err):" >&2
            tail -n 20 "$err" >&2
        fi
        ;;
    *) echo running ;;
    esac
    ;;
*)
    if [ -f "$id" ]; then
        { read -r state; read -r reason; } <"$id"
        echo "$state"
        if [ "$state" = failed ]; then
            task=${id##*/}
            spool=${id%/status/*}
            echo "paddock: task $task failed: $reason" >&2
            if [ -s "$spool/$task.sh.err" ]; then
                echo "paddock: the last lines of its stderr ($spool/$task.sh.err):" >&2
                tail -n 20 "$spool/$task.sh.err" >&2
            fi
        fi
    else
        echo running
    fi
    ;;
esac
