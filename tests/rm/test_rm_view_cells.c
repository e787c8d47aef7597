/* test_rm_view_cells.c - compact deltas (proto/view_cells.h): the wait grid, the codec and what
 * its decoder refuses, which nodes rm/rmview publishes compact and in which order of the chain,
 * and a JM's view taking them (jm/view_proto.h). */
#include "common/err.h"
#include "jm/view.h"
#include "jm/view_proto.h"
#include "proto/pack.h"
#include "proto/view_cells.h"
#include "rm/rmview.h"
#include "tests/rm/rmview_hb.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

static void test_grid(void **state)
{
    (void)state;
    /* every wait the RM publishes is a grid point, and back to the same wait */
    for (uint32_t ms = 0; ms < 40u * 1000 * 1000; ms += ms < 100000 ? 7 : 9973) {
        uint32_t q = rmview_quantize_ms(ms);
        int g = proto_view_grid_index(q);
        if (q > proto_view_grid_ms(PROTO_VIEW_GRID_NEVER - 1)) { /* about 6.8 hours */
            assert_int_equal(g, -1); /* past the grid: the node travels in a VIEW_DELTA */
            continue;
        }
        assert_true(g >= 0 && g < (int)PROTO_VIEW_GRID_NEVER);
        assert_int_equal(proto_view_grid_ms((uint32_t)g), q);
    }
    assert_int_equal(proto_view_grid_index(PROTO_WAIT_NEVER), PROTO_VIEW_GRID_NEVER);
    assert_int_equal(proto_view_grid_ms(PROTO_VIEW_GRID_NEVER), PROTO_WAIT_NEVER);
    assert_int_equal(proto_view_grid_index(1700), 33); /* 100 ms steps from 1.6 s */
    assert_int_equal(proto_view_grid_index(1650), -1);
    assert_int_equal(proto_view_grid_index(25), -1);
    assert_int_equal(proto_view_grid_ms(32), 1600);
    assert_int_equal(proto_view_grid_ms(48), 3200);
}

static const uint32_t CELLS_A[6] = {0, 50, 1600, 3400, PROTO_WAIT_NEVER, 12800};
static const uint32_t CELLS_B[6] = {100, 100, 100, 100, 100, 100};

static void test_round_trip(void **state)
{
    (void)state;
    struct proto_view_cells_node nodes[2] = {{"pn-a", 7, 120, CELLS_A},
                                             {"pn-b", 1ull << 40, 0, CELLS_B}};
    struct proto_view_cells c = {.rm_id = 3,
                                 .view_seq = 11,
                                 .base_seq = 10,
                                 .timestamp_ms = 123456789,
                                 .ncpu = 2,
                                 .nmem = 3,
                                 .nodes = nodes,
                                 .nnodes = 2};
    proto_buf_t b;
    proto_buf_init(&b);
    assert_int_equal(proto_view_cells_encode(&c, &b), 0);
    assert_true(proto_view_cells_is(b.data, b.len));
    struct proto_view_cells d;
    char err[160];
    assert_int_equal(proto_view_cells_decode(b.data, b.len, &d, err, sizeof err), 0);
    assert_int_equal(d.rm_id, 3);
    assert_int_equal(d.view_seq, 11);
    assert_int_equal(d.base_seq, 10);
    assert_int_equal(d.timestamp_ms, 123456789);
    assert_int_equal(d.ncpu, 2);
    assert_int_equal(d.nmem, 3);
    assert_int_equal(d.nnodes, 2);
    assert_string_equal(d.nodes[0].name, "pn-a");
    assert_string_equal(d.nodes[1].name, "pn-b");
    assert_int_equal(d.nodes[0].seq, 7);
    assert_int_equal(d.nodes[1].seq, 1ull << 40);
    assert_int_equal(d.nodes[0].age_ms, 120);
    assert_memory_equal(d.nodes[0].cells_ms, CELLS_A, sizeof CELLS_A);
    assert_memory_equal(d.nodes[1].cells_ms, CELLS_B, sizeof CELLS_B);
    proto_view_cells_close(&d);

    /* an empty one is a link of the chain too */
    c.nnodes = 0;
    assert_int_equal(proto_view_cells_encode(&c, &b), 0);
    assert_int_equal(proto_view_cells_decode(b.data, b.len, &d, err, sizeof err), 0);
    assert_int_equal(d.nnodes, 0);
    proto_view_cells_close(&d);

    /* what the encoder refuses */
    c.nnodes = 2;
    uint32_t off[6] = {0, 0, 0, 0, 0, 25}; /* not a grid point */
    nodes[1].cells_ms = off;
    assert_int_equal(proto_view_cells_encode(&c, &b), ERR_INVAL);
    nodes[1].cells_ms = CELLS_B;
    nodes[1].name = "";
    assert_int_equal(proto_view_cells_encode(&c, &b), ERR_INVAL);
    nodes[1].name = "pn-b";
    c.ncpu = 0;
    assert_int_equal(proto_view_cells_encode(&c, &b), ERR_INVAL);
    proto_buf_close(&b);
}

/* A frame with this header and a body deflated from raw bytes. */
static size_t frame(uint8_t *out, size_t cap, uint32_t ncpu, uint32_t nmem, uint32_t nnodes,
                    const uint8_t *raw, size_t rawlen)
{
    memset(out, 0, PROTO_VIEW_CELLS_HDR);
    memcpy(out, PROTO_VIEW_TOPIC_CELLS, PROTO_VIEW_TOPIC_LEN);
    out[PROTO_VIEW_TOPIC_LEN + 32] = (uint8_t)ncpu;
    out[PROTO_VIEW_TOPIC_LEN + 33] = (uint8_t)nmem;
    out[PROTO_VIEW_TOPIC_LEN + 34] = (uint8_t)nnodes;
    out[PROTO_VIEW_TOPIC_LEN + 35] = (uint8_t)(nnodes >> 8);
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (Bytef *)raw;
    z.avail_in = (uInt)rawlen;
    z.next_out = out + PROTO_VIEW_CELLS_HDR;
    z.avail_out = (uInt)(cap - PROTO_VIEW_CELLS_HDR);
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t n = PROTO_VIEW_CELLS_HDR + z.total_out;
    deflateEnd(&z);
    return n;
}

static void test_decoder_refuses(void **state)
{
    (void)state;
    static uint8_t buf[1 << 20], raw[1 << 19];
    struct proto_view_cells d;
    char err[160];
    /* one good node of 1 x 1 cells: name "n", seq 1, age 0, cell 0 */
    const uint8_t good[] = {1, 'n', 1, 0, 0};
    size_t n = frame(buf, sizeof buf, 1, 1, 1, good, sizeof good);
    assert_int_equal(proto_view_cells_decode(buf, n, &d, err, sizeof err), 0);
    proto_view_cells_close(&d);
    for (size_t cut = 0; cut < n; cut++) /* every truncation */
        assert_int_equal(proto_view_cells_decode(buf, cut, &d, err, sizeof err), ERR_INVAL);
    /* bytes after the last node, a node short of its cells, a zero-length or NUL name */
    const uint8_t extra[] = {1, 'n', 1, 0, 0, 9};
    n = frame(buf, sizeof buf, 1, 1, 1, extra, sizeof extra);
    assert_int_equal(proto_view_cells_decode(buf, n, &d, err, sizeof err), ERR_INVAL);
    n = frame(buf, sizeof buf, 1, 2, 1, good, sizeof good);
    assert_int_equal(proto_view_cells_decode(buf, n, &d, err, sizeof err), ERR_INVAL);
    const uint8_t noname[] = {0, 1, 0, 0};
    n = frame(buf, sizeof buf, 1, 1, 1, noname, sizeof noname);
    assert_int_equal(proto_view_cells_decode(buf, n, &d, err, sizeof err), ERR_INVAL);
    const uint8_t nul[] = {1, 0, 1, 0, 0};
    n = frame(buf, sizeof buf, 1, 1, 1, nul, sizeof nul);
    assert_int_equal(proto_view_cells_decode(buf, n, &d, err, sizeof err), ERR_INVAL);
    /* a varint of eleven bytes */
    const uint8_t longv[] = {1,    'n',  0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                             0xff, 0xff, 0xff, 0xff, 1,    0,    0};
    n = frame(buf, sizeof buf, 1, 1, 1, longv, sizeof longv);
    assert_int_equal(proto_view_cells_decode(buf, n, &d, err, sizeof err), ERR_INVAL);
    /* dimensions and counts out of range */
    n = frame(buf, sizeof buf, 0, 1, 1, good, sizeof good);
    assert_int_equal(proto_view_cells_decode(buf, n, &d, err, sizeof err), ERR_INVAL);
    n = frame(buf, sizeof buf, 17, 1, 1, good, sizeof good);
    assert_int_equal(proto_view_cells_decode(buf, n, &d, err, sizeof err), ERR_INVAL);
    n = frame(buf, sizeof buf, 1, 1, PROTO_VIEW_CELLS_MAX_NODES + 1, good, sizeof good);
    assert_int_equal(proto_view_cells_decode(buf, n, &d, err, sizeof err), ERR_INVAL);
    /* a deflate bomb: half a MiB of zeros claimed as one node */
    memset(raw, 0, sizeof raw);
    n = frame(buf, sizeof buf, 1, 1, 1, raw, sizeof raw);
    assert_true(n < 4096);
    assert_int_equal(proto_view_cells_decode(buf, n, &d, err, sizeof err), ERR_INVAL);
    /* not this form at all */
    buf[3] = PROTO_VIEW_DELTA;
    assert_false(proto_view_cells_is(buf, n));
    assert_int_equal(proto_view_cells_decode(buf, n, &d, err, sizeof err), ERR_INVAL);
}

/* What rmview publishes: VIEW_DELTAs (kept, with their nodes' names), then VIEW_CELLS. */
struct pub {
    int kinds[8]; /* PROTO_VIEW_DELTA or PROTO_VIEW_CELLS_TYPE, in order */
    uint64_t base[8], seq[8];
    char names[8][4][16];
    uint32_t count[8];
    uint32_t last_cell[8][4];
    int n;
};

static int pub_delta(void *arg, const proto_msg_t *m)
{
    struct pub *p = arg;
    assert_true(p->n < 8);
    p->kinds[p->n] = (int)m->type;
    p->base[p->n] = m->view_delta.base_seq;
    p->seq[p->n] = m->view_delta.view_seq;
    p->count[p->n] = m->view_delta.nchanged;
    for (uint32_t i = 0; i < m->view_delta.nchanged && i < 4; i++)
        strcpy(p->names[p->n][i], m->view_delta.changed[i].name);
    p->n++;
    return 0;
}

static int pub_cells(void *arg, const struct proto_view_cells *c)
{
    struct pub *p = arg;
    assert_true(p->n < 8);
    p->kinds[p->n] = PROTO_VIEW_CELLS_TYPE;
    p->base[p->n] = c->base_seq;
    p->seq[p->n] = c->view_seq;
    p->count[p->n] = c->nnodes;
    for (uint32_t i = 0; i < c->nnodes && i < 4; i++) {
        strcpy(p->names[p->n][i], c->nodes[i].name);
        p->last_cell[p->n][i] = c->nodes[i].cells_ms[c->ncpu * c->nmem - 1];
    }
    p->n++;
    return 0;
}

/* Three nodes whole in a JM's view (a snapshot taken), then: a's waits move, b's load alone,
 * c's capacity. c travels in a VIEW_DELTA, a in a VIEW_CELLS after it, b in neither. */
static void test_rmview_publishes_compact(void **state)
{
    (void)state;
    rmview_t *v = rmview_new();
    assert_non_null(v);
    proto_heartbeat_t hb;
    const char *names[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        heartbeat(&hb, names[i], 1, 1);
        assert_int_equal(rmview_ingest(v, &hb, 1000), RMVIEW_FRESH);
    }
    view_t *jv = NULL;
    assert_int_equal(view_new(&jv), 0);
    struct pub p = {0};
    assert_int_equal(rmview_publish_delta_cells(v, 1000, 1, pub_delta, pub_cells, &p), 0);
    assert_int_equal(p.n, 1); /* new nodes: a VIEW_DELTA names them whole */
    assert_int_equal(p.kinds[0], PROTO_VIEW_DELTA);
    assert_int_equal(p.count[0], 3);
    for (size_t i = 0; i < rmview_count(v); i++) { /* the JM's view holds them */
        const struct rmview_node *n = rmview_at(v, i);
        proto_view_node_t w = {.name = (char *)n->name,
                               .rack = (char *)n->rack,
                               .endpoint = (char *)n->endpoint,
                               .state = PROTO_NODE_UP,
                               .cpu = n->cpu,
                               .mem_mb = n->mem_mb,
                               .matrix = n->matrix,
                               .boot_id = n->boot_id,
                               .seq = n->seq};
        assert_int_equal(view_update_from_replica(jv, &w, 1000, 0), 1);
    }
    struct view_stream st = {.seq = p.seq[0], .synced = 1};

    heartbeat(&hb, "a", 1, 2); /* last cell 2 s (was 1 s) */
    assert_int_equal(rmview_ingest(v, &hb, 1200), RMVIEW_FRESH);
    heartbeat(&hb, "b", 1, 1 + 1);
    hb.matrix.cells_ms[3] = 1000; /* waits as they were: the load alone moved */
    assert_int_equal(rmview_ingest(v, &hb, 1200), RMVIEW_FRESH);
    heartbeat(&hb, "c", 1, 2);
    hb.cpu = 16;
    assert_int_equal(rmview_ingest(v, &hb, 1200), RMVIEW_FRESH);
    memset(&p, 0, sizeof p);
    uint64_t seq0 = rmview_seq(v);
    assert_int_equal(rmview_publish_delta_cells(v, 1250, 1, pub_delta, pub_cells, &p), 0);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.kinds[0], PROTO_VIEW_DELTA);
    assert_int_equal(p.count[0], 1);
    assert_string_equal(p.names[0][0], "c");
    assert_int_equal(p.kinds[1], PROTO_VIEW_CELLS_TYPE);
    assert_int_equal(p.count[1], 1);
    assert_string_equal(p.names[1][0], "a");
    assert_int_equal(p.last_cell[1][0], 2000);
    /* one chain: delta then cells */
    assert_int_equal(p.base[0], seq0);
    assert_int_equal(p.seq[0], seq0 + 1);
    assert_int_equal(p.base[1], seq0 + 1);
    assert_int_equal(p.seq[1], seq0 + 2);
    assert_int_equal(rmview_seq(v), seq0 + 2);

    /* the JM takes the chain and a's cells; a cells message out of sequence is a gap */
    proto_msg_t dm;
    proto_msg_init(&dm, PROTO_VIEW_DELTA);
    dm.view_delta.base_seq = p.base[0];
    dm.view_delta.view_seq = p.seq[0];
    assert_int_equal(view_stream_take(&st, &dm), VIEW_STREAM_NEXT);
    uint32_t cells[4] = {0, 0, 0, 2000};
    struct proto_view_cells_node cn[2] = {{"a", 2, 50, cells}, {"zz", 2, 50, cells}};
    struct proto_view_cells c = {.rm_id = 1,
                                 .view_seq = p.seq[1],
                                 .base_seq = p.base[1],
                                 .ncpu = 2,
                                 .nmem = 2,
                                 .nodes = cn,
                                 .nnodes = 2};
    assert_int_equal(view_stream_take_cells(&st, &c), VIEW_STREAM_NEXT);
    size_t skipped = 0;
    assert_int_equal(view_update_cells_from_replica(jv, &c, 1300, 0, &skipped), 1);
    assert_int_equal(skipped, 1); /* "zz": not in the view */
    const struct view_node *a = view_node(jv, (uint32_t)view_find(jv, "a"));
    assert_int_equal(a->seq, 2);
    assert_true(a->wait_s[3] > 1.99f && a->wait_s[3] < 2.01f);
    assert_int_equal(view_age_ms(a, 1300), 50);
    /* the same again is stale; another shape is refused */
    assert_int_equal(view_update_cells_from_replica(jv, &c, 1300, 0, NULL), 0);
    c.nmem = 1;
    assert_int_equal(view_update_cells_from_replica(jv, &c, 1300, 0, &skipped), 0);
    assert_int_equal(skipped, 2);
    c.base_seq = 999;
    assert_int_equal(view_stream_take_cells(&st, &c), VIEW_STREAM_GAP);

    /* without an emitter of compact deltas, a's next move goes whole, as before */
    heartbeat(&hb, "a", 1, 3);
    assert_int_equal(rmview_ingest(v, &hb, 1400), RMVIEW_FRESH);
    memset(&p, 0, sizeof p);
    assert_int_equal(rmview_publish_delta(v, 1450, 1, pub_delta, &p), 0);
    assert_int_equal(p.n, 1);
    assert_int_equal(p.kinds[0], PROTO_VIEW_DELTA);
    assert_string_equal(p.names[0][0], "a");
    view_destroy(&jv);
    rmview_destroy(&v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grid),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_decoder_refuses),
        cmocka_unit_test(test_rmview_publishes_compact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
