/* node_metrics.c - the node's families in the PN's Prometheus exposition (docs/pn.md
 * "Metrics"). Built on each scrape from the node's counters and live tasks, on the loop. */
#include "common/metrics.h"
#include "pn/node.h"
#include "pn/node_internal.h"

static const char *const node__class_name[2] = {"regular", "opportunistic"};

static const char *const node__refusal_name[NODE_REFUSED_COUNT] = {
    [NODE_REFUSED_FENCED] = "fenced",         [NODE_REFUSED_CAPACITY] = "capacity",
    [NODE_REFUSED_QUEUE_FULL] = "queue_full", [NODE_REFUSED_SPEC_BYTES] = "spec_bytes",
    [NODE_REFUSED_DRAINING] = "draining",     [NODE_REFUSED_INVALID] = "invalid",
    [NODE_REFUSED_NO_MEMORY] = "no_memory",   [NODE_REFUSED_USER] = "user",
};

static void node__counter(struct metrics *m, const char *name, const char *help, uint64_t v)
{
    metrics_counter1(m, name, help, (double)v);
}

void node_metrics(const node_t *n, struct metrics *m)
{
    node_counters_t c;
    node_counters(n, &c);

    /* live tasks by state and class */
    uint64_t live[PROTO_TASK_STATE_COUNT][2] = {{0}};
    size_t it = 0;
    void *v;
    while (map_next(&n->byid, &it, NULL, NULL, &v)) {
        const node__task_t *t = v;
        if (!proto_task_state_terminal(t->state))
            live[t->state][t->klass == PROTO_CLASS_OPPORTUNISTIC]++;
    }
    metrics_family(m, "paddock_pn_tasks", METRICS_GAUGE,
                   "Tasks on the node now, by state (queued, staging, running) and class.");
    const proto_task_state_t live_states[] = {PROTO_TASK_QUEUED, PROTO_TASK_STAGING,
                                              PROTO_TASK_RUNNING};
    for (size_t i = 0; i < sizeof live_states / sizeof *live_states; i++) {
        for (int k = 0; k < 2; k++) {
            const char *l[] = {"state", proto_task_state_name(live_states[i]), "class",
                               node__class_name[k], NULL};
            metrics_sample(m, l, (double)live[live_states[i]][k]);
        }
    }
    metrics_family(m, "paddock_pn_tasks_ended_total", METRICS_COUNTER,
                   "Tasks that reached a terminal state, by state and class.");
    for (int s = 0; s < PROTO_TASK_STATE_COUNT; s++) {
        if (!proto_task_state_terminal((proto_task_state_t)s))
            continue;
        for (int k = 0; k < 2; k++) {
            const char *l[] = {"state", proto_task_state_name((proto_task_state_t)s), "class",
                               node__class_name[k], NULL};
            metrics_sample(m, l, (double)c.ended[s][k]);
        }
    }
    size_t remembered = n->tasks.len;
    metrics_gauge1(m, "paddock_pn_tasks_remembered",
                   "Tasks remembered for reconnecting job managers (live, and finished within "
                   "[tasks] retain).",
                   (double)remembered);

    queue_stats_t st;
    queue_stats(n->queue, &st);
    metrics_family(m, "paddock_pn_queue_length", METRICS_GAUGE,
                   "Tasks waiting in the node's queues (staging ones included), by class.");
    const char *lr[] = {"class", "regular", NULL}, *lo[] = {"class", "opportunistic", NULL};
    metrics_sample(m, lr, (double)st.regular_queued);
    metrics_sample(m, lo, (double)st.opportunistic_queued);

    metrics_family(m, "paddock_pn_task_starts_total", METRICS_COUNTER,
                   "Task processes started, by class.");
    metrics_sample(m, lr, (double)c.starts[0]);
    metrics_sample(m, lo, (double)c.starts[1]);
    node__counter(m, "paddock_pn_spawn_failures_total",
                  "Tasks whose process could not be started (command not found, fork failed).",
                  c.spawn_failures);

    metrics_family(m, "paddock_pn_spawn_latency_seconds", METRICS_HISTOGRAM,
                   "Time to start a task's process: argv[0] looked up, output files opened, vfork "
                   "until the child's exec.");
    metrics_histogram(m, NULL, &n->spawn_hist);
    metrics_family(m, "paddock_pn_task_start_delay_seconds", METRICS_HISTOGRAM,
                   "Time from a TASK_CREATE to its process started: set-up, queueing and "
                   "spawn.");
    metrics_histogram(m, NULL, &n->delay_hist);

    node__counter(m, "paddock_pn_preemptions_total",
                  "Opportunistic tasks killed for regular work (reported preempted).", c.preempted);
    node__counter(m, "paddock_pn_upgrades_total",
                  "TASK_UPGRADE that made a live opportunistic task regular.", c.upgrades);
    node__counter(m, "paddock_pn_downgrades_total",
                  "TASK_UPGRADE that made a live regular task opportunistic.", c.downgrades);
    node__counter(m, "paddock_pn_class_swaps_total",
                  "Regular tasks that waited as opportunistic while their own job's running "
                  "opportunistic tasks turned regular, instead of preempting them.",
                  c.swaps);
    node__counter(m, "paddock_pn_class_trades_total",
                  "Queued opportunistic tasks that started as regular in the place of their own "
                  "job's lower-priority regular task, which waits as opportunistic instead.",
                  c.trades);
    node__counter(m, "paddock_pn_priority_reorders_total",
                  "Starts of a higher-priority task of the same job in the place of the one the "
                  "queue order gave.",
                  c.reorders);
    node__counter(m, "paddock_pn_graces_ended_total",
                  "Urgent regular tasks that ended downgraded tasks' graces.", c.graces_ended);

    metrics_family(m, "paddock_pn_creates_refused_total", METRICS_COUNTER,
                   "TASK_CREATE answered ERROR, by reason.");
    for (int r = 0; r < NODE_REFUSED_COUNT; r++) {
        const char *l[] = {"reason", node__refusal_name[r], NULL};
        metrics_sample(m, l, (double)c.creates_refused[r]);
    }
    node__counter(m, "paddock_pn_requests_total", "Messages received from job managers.",
                  c.requests);
    node__counter(m, "paddock_pn_requests_rejected_total",
                  "Messages from job managers that could not be decoded or have no use here.",
                  c.rejected);
    node__counter(m, "paddock_pn_commands_fenced_total",
                  "Commands and queries refused for carrying an older epoch than the job's.",
                  c.refused_fenced);
    node__counter(m, "paddock_pn_queries_total", "TASK_QUERY answered.", c.queries);
    node__counter(m, "paddock_pn_task_dirs_early_total",
                  "Task directories given back as soon as their task succeeded leaving nothing "
                  "(empty stdout and stderr, no files).",
                  c.dirs_early);
    node__counter(m, "paddock_pn_task_dirs_at_start_total",
                  "Tasks whose directory was taken from the spares or made when they started "
                  "(nothing to stage and no spare when they were created).",
                  c.dirs_lazy);
    node__counter(m, "paddock_pn_task_dirs_handed_total",
                  "Of those, tasks given the emptied directory of a task that ended in the same "
                  "loop pass (one rename, not two through the spares).",
                  c.dirs_handed);
    node__counter(m, "paddock_pn_matrix_computes_total",
                  "Wait-time matrices computed (one simulation of the queue each).",
                  c.matrix_computes);
    node__counter(m, "paddock_pn_matrix_kept_total",
                  "Terminal statuses sent with the last matrix (at most matrix_min_interval old) "
                  "because regular work was queued to take the room the task freed.",
                  c.matrix_kept);
    node__counter(m, "paddock_pn_estimates_total",
                  "TASK_ESTIMATE that gave a live task the JM's new runtime estimate.",
                  c.estimates);
    node__counter(m, "paddock_pn_estimates_ignored_total",
                  "TASK_ESTIMATE for a task that is not live here.", c.estimates_ignored);
    node__counter(m, "paddock_pn_statuses_sent_total", "Task statuses sent to job managers.",
                  c.statuses_sent);
    node__counter(m, "paddock_pn_status_messages_total",
                  "Messages that carried statuses (TASK_STATUS, or TASK_STATUS_BATCH).",
                  c.status_messages);
    node__counter(m, "paddock_pn_status_batches_total",
                  "TASK_STATUS_BATCH messages sent (several statuses of one job, one loop pass).",
                  c.status_batches);
    node__counter(m, "paddock_pn_statuses_unsent_total",
                  "QUEUED statuses not sent because the task started as soon as it was set up "
                  "(its RUNNING status answered the create).",
                  c.queued_unsent);
    node__counter(m, "paddock_pn_statuses_merged_total",
                  "RUNNING statuses not sent because the task ended in the same loop pass "
                  "(its terminal status carries its start).",
                  c.running_unsent);
    node__counter(m, "paddock_pn_memory_kills_total",
                  "Tasks killed for resident memory over their request.", c.memory_kills);
    node__counter(m, "paddock_pn_reaped_total",
                  "Live tasks killed because the RM said their job was over.", c.reaped);
    node__counter(m, "paddock_pn_stage_cache_hits_total", "Task files found in the cache.",
                  c.cache_hits);
    node__counter(m, "paddock_pn_stage_cache_misses_total", "Task files copied into the cache.",
                  c.cache_misses);

    metrics_gauge1(m, "paddock_pn_capacity_cpus", "Cores the node offers to tasks.", n->cfg->cpus);
    metrics_gauge1(m, "paddock_pn_capacity_memory_bytes", "Memory the node offers to tasks.",
                   (double)n->cfg->memory);
    metrics_gauge1(m, "paddock_pn_used_cpus", "Cores requested by running tasks.", st.cpu_used);
    metrics_gauge1(m, "paddock_pn_used_memory_bytes", "Memory requested by running tasks.",
                   st.mem_used * 1048576.0);
    metrics_gauge1(m, "paddock_pn_spare_task_dirs",
                   "Emptied task directories ready for new tasks (WORK/spare).",
                   (double)n->nspares);
}
