/* Unit tests for the merge of the events into time order (report/pf_model_events.c): files of several
 * processes, each of several threads writing packed records (PF_REC_PACKED) of a few to a thousand events
 * and records of one event, chunks shared by writers (PF_REC_WRITER), and times that tie across threads and
 * processes, are walked and merged as the reporter does, in batches of every size. The order must be the
 * iterator's contract, computed here apart: time, then the lower process, then the lower file offset, then
 * the order inside a packed record; each event's payload must be its own (a packed one's, beside the
 * batch, numbered by seq). Both ways the sweep takes them (pf_events_pipe.c): merged between batches on
 * the sweep's thread, and merged on a thread of its own through the ring of batches, which must hand over
 * every batch whole, in order, with its payloads, and end when the sweep stops early. */
#include "test_report_writer.h"

#include "pf_events_pipe.h"
#include "pf_loader_int.h"
#include "pf_packed.h"

typedef struct want {
    uint64_t t, addr, offset;
    uint32_t proc, index, size, stack_id;
    uint16_t type, aux;
} want_t;

typedef struct walk_ctx {
    loader_t *L;
    want_t *want;
    size_t n_want, cap_want;
} walk_ctx_t;

static uint64_t rng = 88172645463325252ull;
static uint32_t next_rand(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static want_t *add_want(walk_ctx_t *w, const pf_record_t *r, uint32_t index, uint64_t t)
{
    want_t *x = PF_VEC_PUSH(w->want, w->n_want, w->cap_want);
    *x = (want_t){.t = t + w->L->m->procs[w->L->cur].offset_ns, .offset = r->offset, .proc = w->L->cur, .index = index};
    return x;
}

/* The reporter's walk (pf_model.c's on_record, for the events), noting each event in walk order. */
static int on_record(void *ctx, const pf_record_t *r)
{
    walk_ctx_t *w = ctx;
    pf_events_record(w->L, r);
    if (r->type == PF_REC_PACKED) {
        const uint8_t *at = r->payload, *end = at + r->payload_bytes;
        pf_pk_reader_t st = {0};
        pf_pk_event_t ev;
        for (uint32_t i = 0; pf_pk_decode(&at, end, &st, &ev) > 0; i++) {
            want_t *x = add_want(w, r, i, ev.p.t_ns);
            x->type = ev.type;
            x->aux = ev.aux;
            x->addr = ev.p.addr;
            x->size = ev.p.size;
            x->stack_id = ev.p.stack_id;
        }
    } else if (r->type == PF_REC_ALLOC_SHORT || r->type == PF_REC_FREE) {
        pf_rec_alloc_short_t a = {0};
        memcpy(&a, r->payload, r->type == PF_REC_FREE ? sizeof(pf_rec_free_t) : sizeof a);
        want_t *x = add_want(w, r, 0, a.t_ns);
        x->type = r->type;
        x->aux = r->aux;
        x->addr = a.addr;
        x->size = a.size;
        x->stack_id = a.stack_id;
    }
    return 0;
}

static int cmp_want(const void *a, const void *b)
{
    const want_t *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->proc != y->proc)
        return x->proc < y->proc ? -1 : 1;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* One process's file: n_threads threads take turns, each turn in a new chunk or after a WRITER record in
 * the current one; a turn writes packed records (1 to 1200 events) and records of one event. Times move
 * in steps of 0 or 10 ns, so that threads and processes tie often; thread k's from (k - 1) * apart. The last
 * thread writes first. back_in_time: halfway, a thread's time goes back 5 us (the loader then sorts an
 * array of every event instead of merging streams). */
static const char *build_process(const char *name, uint32_t pid, int n_threads, int turns, uint64_t apart,
                                 int back_in_time)
{
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, pid);
    b_chunk(&b, 1);
    b_code(&b, 1, "/s/app.py", "main", 20);
    uint32_t one = 1;
    b_stack(&b, 1, 1, &one);
    uint64_t t[8];
    for (int k = 0; k < 8; k++)
        t[k] = (uint64_t)(k ? k - 1 : 0) * apart;
    static uint8_t buf[1200 * PF_PK_EVENT_MAX];
    for (int turn = 0; turn < turns; turn++) {
        uint32_t tid = turn ? 1 + next_rand((uint32_t)n_threads) : (uint32_t)n_threads;
        if (back_in_time && turn == turns / 2)
            t[tid] -= t[tid] < 5000 ? t[tid] : 5000;    /* as watch's records are: after the fact */
        int records = 1 + (int)next_rand(4);
        if (next_rand(2) || b.chunk_end - b.pos < 64)
            b_chunk(&b, tid);
        else
            b_writer(&b, tid);
        for (int r = 0; r < records; r++) {
            if (next_rand(3) == 0) {     /* one event, its own record */
                if (b.chunk_end - b.pos < 64)
                    break;
                t[tid] += 10 * next_rand(2);
                uint64_t addr = 0x10000 + 64 * (uint64_t)next_rand(5000);
                if (next_rand(2))
                    b_alloc_short(&b, t[tid], addr, 16 + next_rand(100), PF_DOMAIN_MALLOC, 0, 1);
                else
                    b_free(&b, t[tid], addr);
                continue;
            }
            size_t room = b.chunk_end - b.pos - sizeof(pf_rec_header_t) - 8;
            uint32_t events = 1 + next_rand(next_rand(2) ? 1200 : 20);
            size_t n = 0;
            pf_pk_state_t st = {0};
            for (uint32_t i = 0; i < events && n + PF_PK_EVENT_MAX <= room; i++) {
                t[tid] += 10 * next_rand(2);
                uint64_t addr = 0x10000 + 64 * (uint64_t)next_rand(5000);
                if (next_rand(2))
                    n += pf_pk_encode_alloc(buf + n, &st, t[tid], addr, 16 + next_rand(100), 1, PF_DOMAIN_MALLOC,
                                            PF_ALLOC_EXACT, 0);
                else
                    n += pf_pk_encode_free(buf + n, &st, t[tid], addr, PF_FREE_AUX(PF_DOMAIN_PYOBJ, 0));
            }
            if (!n)
                break;
            pf_rec_header_t h = {PF_REC_PACKED, 0, (uint32_t)(sizeof h + n)};
            memcpy(b.buf + b.pos, &h, sizeof h);
            memcpy(b.buf + b.pos + sizeof h, buf, n);
            b.pos += pf_align8(h.bytes);
        }
    }
    return b_save(&b, name, 0);
}

static int collect_record(void *ctx, const pf_record_t *r)
{
    pf_events_collect(ctx, r);
    return 0;
}

/* The event the batch has at index i (the seen'th of the merge) against the contract's x. */
static void check_event(const loader_t *L, const event_t *e, size_t i, const want_t *x, int expected)
{
    assert_true(expected);
    assert_true(e->t == x->t);
    assert_int_equal(e->proc, x->proc);
    assert_int_equal(e->type, x->type);
    assert_int_equal(e->aux, x->aux);
    /* a packed event's seq numbers its payload beside the batch; its offset is its record's */
    int packed = ((const pf_rec_header_t *)(L->procs[e->proc].file.data + x->offset))->type == PF_REC_PACKED;
    assert_int_equal(e->seq, packed ? i + 1 : 0);
    assert_true(((uint64_t)e->offset8 << 3) == x->offset + sizeof(pf_rec_header_t));
    const pf_rec_alloc_short_t *a = pf_event_payload(L, e);
    assert_true(a->addr == x->addr && a->t_ns + L->m->procs[e->proc].offset_ns == x->t);
    if (e->type == PF_REC_ALLOC_SHORT)
        assert_true(a->size == x->size && a->stack_id == x->stack_id);
}

/* window_to: pf_load_opts_t's window (from 0), or 0 for none; back_in_time: build_process's, in the last
 * process */
static void merge_and_check(int n_procs, const int *threads, int turns, uint64_t apart, uint64_t window_to,
                            int back_in_time)
{
    pf_model_t model = {0};
    model.procs = calloc((size_t)n_procs, sizeof *model.procs);
    model.n_procs = (size_t)n_procs;
    loader_t L = {.m = &model, .window_to_ns = window_to};
    L.procs = calloc((size_t)n_procs, sizeof *L.procs);
    walk_ctx_t w = {.L = &L};
    for (int p = 0; p < n_procs; p++) {
        char name[32];
        snprintf(name, sizeof name, "merge%d.pflow", p);
        char err[256];
        assert_int_equal(pf_file_open(build_process(name, 100 + (uint32_t)p, threads[p], turns, apart,
                                                                  back_in_time && p == n_procs - 1), &L.procs[p].file, err,
                                      sizeof err), 0);
        model.procs[p].offset_ns = 30 * (uint64_t)p;    /* a multiple of the steps: ties across processes */
        L.n_procs++;
        L.cur = (uint32_t)p;
        L.run++;
        L.run_chunk = L.walk_dropped = 0;
        assert_int_equal(pf_file_walk(&L.procs[p].file, on_record, &w, err, sizeof err), 0);
    }
    assert_int_equal(L.unordered, back_in_time);
    if (L.unordered) {  /* the loader's second walk */
        pf_events_free_streams(&L);
        for (L.cur = 0; L.cur < L.n_procs; L.cur++) {
            char err[256];
            assert_int_equal(pf_file_walk(&L.procs[L.cur].file, collect_record, &L, err, sizeof err), 0);
        }
    }
    size_t kept = 0;    /* the window's events: allocations in it, anything else up to its end */
    for (size_t i = 0; i < w.n_want; i++)
        if (pf_events_in_window(&L, w.want[i].type, w.want[i].t))
            w.want[kept++] = w.want[i];
    w.n_want = kept;
    qsort(w.want, w.n_want, sizeof *w.want, cmp_want);
    assert_true(w.n_want > 1000);
    const size_t sizes[] = {1, 2, 7, 256, 5000};
    const pf_pipe_mode_t modes[] = {PF_PIPE_INLINE, PF_PIPE_THREAD};
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            pf_events_pipe_t *pipe = pf_events_pipe_open(&L, modes[m], sizes[s], NULL);
            assert_int_equal(pf_events_pipe_threaded(pipe), modes[m] == PF_PIPE_THREAD);
            const event_t *batch;
            size_t seen = 0, n;
            while ((n = pf_events_pipe_next(pipe, &batch, NULL)) > 0) {
                assert_true(n <= sizes[s]);
                for (size_t i = 0; i < n; i++, seen++)
                    check_event(&L, &batch[i], i, &w.want[seen < w.n_want ? seen : 0], seen < w.n_want);
            }
            assert_int_equal(seen, w.n_want);
            assert_int_equal(pf_events_pipe_next(pipe, &batch, NULL), 0);     /* the end stays the end */
            pf_events_pipe_close(pipe);
        }
    /* the sweep may stop anywhere: the merge thread then ends, whether it waits for room or not */
    for (size_t taken = 0; taken < 40; taken += 13) {
        pf_events_pipe_t *pipe = pf_events_pipe_open(&L, PF_PIPE_THREAD, 3, NULL);
        const event_t *batch;
        for (size_t k = 0; k < taken; k++)
            assert_true(pf_events_pipe_next(pipe, &batch, NULL) > 0);
        if (taken == 26)
            usleep(20000);  /* long enough for the merge to fill the ring and sleep */
        pf_events_pipe_close(pipe);
    }
    for (int p = 0; p < n_procs; p++)
        pf_file_close(&L.procs[p].file);
    pf_events_free_streams(&L);
    pf_events_free_packed(&L);
    free(L.events);
    free(L.procs);
    free(model.procs);
    free(w.want);
}

/* One process of one thread: the merge's usual case, one stream, whose packed records are taken whole. */
static void test_one_stream(void **state)
{
    (void)state;
    const int threads[] = {1};
    merge_and_check(1, threads, 60, 0, 0, 0);
}

/* Threads of one process taking turns, with ties between them. */
static void test_threads_taking_turns(void **state)
{
    (void)state;
    const int threads[] = {5};
    merge_and_check(1, threads, 200, 0, 0, 0);
}

/* Three processes of one, three and seven threads, on one clock with ties across them. */
static void test_several_processes(void **state)
{
    (void)state;
    const int threads[] = {1, 3, 7};
    merge_and_check(3, threads, 120, 0, 0, 0);
}

/* A window that leaves a thread without an event: the first stream, whose place in the heap the next
 * stream then takes (it once took it over with the first's count of runs read, and read past its own). */
static void test_window_leaves_a_stream_empty(void **state)
{
    (void)state;
    const int threads[] = {3, 2};
    merge_and_check(2, threads, 200, 1000000000, 900000000, 0);
}

/* A thread of the second process goes back in time: the loader's array of every event, sorted, is taken
 * both ways too, each packed event's payload copied beside its batch (the array's own are the loader's). */
static void test_back_in_time(void **state)
{
    (void)state;
    const int threads[] = {2, 4};
    merge_and_check(2, threads, 150, 0, 0, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_stream),
        cmocka_unit_test(test_threads_taking_turns),
        cmocka_unit_test(test_several_processes),
        cmocka_unit_test(test_window_leaves_a_stream_empty),
        cmocka_unit_test(test_back_in_time),
    };
    return cmocka_run_group_tests(tests, writer_setup, writer_teardown);
}
