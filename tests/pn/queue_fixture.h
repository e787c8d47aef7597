/* queue_fixture.h - small helpers the unit tests of pn/queue (test_queue.c,
 * test_queue_class.c) share. Each fails the running cmocka test on an unexpected error. */
#ifndef PADDOCK_TESTS_PN_QUEUE_FIXTURE_H
#define PADDOCK_TESTS_PN_QUEUE_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "pn/queue.h"

/* A queue of cpus cores and mem MB, at most max_reg regular and max_opp opportunistic tasks
 * (0: the default). */
queue_t *mkq(double cpus, double mem, size_t max_reg, size_t max_opp);
/* Pushes task id of class k and opportunistic weight w; queue_push's return code. */
int push(queue_t *q, uint64_t id, double cpu, double mem, double est, queue_class_t k, double w);
/* The id queue_pick starts at `now` with `draw`, 0 when nothing can start. */
uint64_t pick(queue_t *q, double now, double draw);

#endif
