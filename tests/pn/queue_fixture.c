/* queue_fixture.c - see queue_fixture.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/err.h"
#include "tests/pn/queue_fixture.h"

queue_t *mkq(double cpus, double mem, size_t max_reg, size_t max_opp)
{
    queue_config_t c = {
        .cpus = cpus, .mem_mb = mem, .max_regular = max_reg, .max_opportunistic = max_opp};
    queue_t *q = queue_new(&c);
    assert_non_null(q);
    return q;
}

int push(queue_t *q, uint64_t id, double cpu, double mem, double est, queue_class_t k, double w)
{
    queue_task_t t = {.id = id, .cpu = cpu, .mem_mb = mem, .est_s = est, .klass = k, .weight = w};
    return queue_push(q, &t);
}

uint64_t pick(queue_t *q, double now, double draw)
{
    queue_task_t t;
    int rc = queue_pick(q, now, draw, &t);
    if (rc == ERR_NOTFOUND)
        return 0;
    assert_int_equal(rc, 0);
    return t.id;
}
