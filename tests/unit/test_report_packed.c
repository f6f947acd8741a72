/* Unit tests for packed events (PF_REC_PACKED, core/pf_packed.h): the varint and zigzag codes at their
 * edges; events encoded and decoded back; a profile holding the same events packed and one record each
 * gives the same model (also when a stream goes back in time and the loader sorts an array of events); a
 * packed record whose last event the writer's death cut off (its tag still 0) loses only that event; one
 * holding bytes that are no event is refused in a sentence; young allocations' frees come out of their life
 * bytes where the FREE events would have been. */
#include "test_report_writer.h"
#include "pf_packed.h"

static void test_varint_and_zigzag(void **state)
{
    (void)state;
    const uint64_t values[] = {0, 1, 127, 128, 300, 16383, 16384, UINT32_MAX, (uint64_t)1 << 56, UINT64_MAX - 1,
                               UINT64_MAX};
    const unsigned lens[] = {1, 1, 1, 2, 2, 2, 3, 5, 9, 10, 10};
    for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
        uint8_t buf[16];
        unsigned n = pf_varint_put(buf, values[i]);
        assert_int_equal(n, lens[i]);
        const uint8_t *p = buf;
        uint64_t v = 0;
        assert_int_equal(pf_varint_get(&p, buf + n, &v), 0);
        assert_true(v == values[i] && p == buf + n);
        p = buf;     /* cut one byte short: refused, never read past the end */
        assert_int_equal(pf_varint_get(&p, buf + n - 1, &v), -1);
    }
    /* the length the writer publishes before the bytes is the bytes' number, at every bit count's ends */
    for (unsigned bits = 0; bits <= 64; bits++) {
        uint64_t low = bits ? (uint64_t)1 << (bits - 1) : 0, high = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
        uint8_t buf[16];
        assert_int_equal(pf_varint_len(low), pf_varint_put(buf, low));
        assert_int_equal(pf_varint_len(high), pf_varint_put(buf, high));
    }
    uint8_t overlong[11];
    memset(overlong, 0x80, sizeof overlong);
    const uint8_t *p = overlong;
    uint64_t v;
    assert_int_equal(pf_varint_get(&p, overlong + sizeof overlong, &v), -1);
    const int64_t signed_values[] = {0, -1, 1, -2, 2, 63, -64, 64, INT64_MAX, INT64_MIN};
    const uint64_t zz[] = {0, 1, 2, 3, 4, 126, 127, 128, UINT64_MAX - 1, UINT64_MAX};
    for (size_t i = 0; i < sizeof zz / sizeof *zz; i++) {
        assert_true(pf_zigzag(signed_values[i]) == zz[i]);
        assert_true(pf_unzigzag(zz[i]) == signed_values[i]);
    }
}

/* The events the tests pack: allocations of three stacks in two domains with each flag, frees of some of
 * them (by realloc, with an object kind, in another domain), addresses going down as well as up. */
enum { N_EVENTS = 900 };
typedef struct test_event {
    int is_alloc;
    uint64_t t, addr;
    uint32_t size, stack_id;
    uint16_t aux;
} test_event_t;

static void make_events(test_event_t *ev)
{
    memset(ev, 0, N_EVENTS * sizeof *ev);
    for (int i = 0; i < N_EVENTS; i++) {
        test_event_t *e = &ev[i];
        int k = i / 2;
        e->t = 1000 + (uint64_t)i * 37 + (uint64_t)(i % 5) * 1000000;
        e->t = i ? (e->t > ev[i - 1].t ? e->t : ev[i - 1].t) : e->t;
        e->addr = (k % 3 == 0 ? 0x7f0000000000ull : 0x550000000000ull) + (uint64_t)(k * 7919 % 4096) * 48;
        if (i % 2 == 0) {
            e->is_alloc = 1;
            e->size = 16 + (uint32_t)(k % 11) * 24 + (k == 7 ? 100000000u : 0);
            e->stack_id = 1 + (uint32_t)(k % 3);
            uint8_t flags = (k % 4 == 1 ? PF_ALLOC_TRUNCATED : 0) | (k % 6 == 2 ? PF_ALLOC_NO_PYSTATE : 0);
            e->aux = PF_ALLOC_SHORT_AUX(k % 2 ? PF_DOMAIN_PYOBJ : PF_DOMAIN_MALLOC,
                                        flags | PF_ALLOC_EXACT | PF_ALLOC_STACK_REF);
        } else {
            e->aux = (uint16_t)(PF_FREE_AUX(k % 2 ? PF_DOMAIN_PYOBJ : PF_DOMAIN_MALLOC, k % 5 == 0 ? PF_OBJ_LIST : 0) |
                                (k % 7 == 3 ? PF_FREE_BY_REALLOC : 0));
            if (k % 4 == 3)
                e->addr += 8;   /* not the block made just before: no such block is live */
        }
    }
}

/* Encodes ev[from, to) into one packed record's payload at out. Returns its bytes. */
static size_t encode(const test_event_t *ev, int from, int to, uint8_t *out)
{
    pf_pk_state_t st = {0};
    size_t n = 0;
    for (int i = from; i < to; i++) {
        const test_event_t *e = &ev[i];
        if (e->is_alloc)
            n += pf_pk_encode_alloc(out + n, &st, e->t, e->addr, e->size, e->stack_id, e->aux & 0xff, e->aux >> 8, 0);
        else
            n += pf_pk_encode_free(out + n, &st, e->t, e->addr, e->aux);
    }
    return n;
}

static void test_events_decode_as_encoded(void **state)
{
    (void)state;
    test_event_t ev[N_EVENTS];
    make_events(ev);
    static uint8_t buf[N_EVENTS * PF_PK_EVENT_MAX];
    size_t n = encode(ev, 0, N_EVENTS, buf);
    assert_true(n < (size_t)N_EVENTS * 12);     /* 56 bytes an allocation-and-free one record each */
    const uint8_t *p = buf;
    pf_pk_reader_t st = {0};
    pf_pk_event_t d = {0};
    for (int i = 0; i < N_EVENTS; i++) {
        assert_int_equal(pf_pk_decode(&p, buf + n, &st, &d), 1);
        assert_int_equal(d.type, ev[i].is_alloc ? PF_REC_ALLOC_SHORT : PF_REC_FREE);
        assert_int_equal(d.aux, ev[i].aux);
        assert_true(d.p.t_ns == ev[i].t && d.p.addr == ev[i].addr);
        if (ev[i].is_alloc)
            assert_true(d.p.size == ev[i].size && d.p.stack_id == ev[i].stack_id);
    }
    assert_int_equal(pf_pk_decode(&p, buf + n, &st, &d), 0);
}

/* Young allocations (core/pf_packed.h): a life byte hands out its free right after the events it names,
 * at the last one's time, in its allocation's domain with its kind; two due after one event, the later
 * allocation's first; an allocation left 0 stays live. A life byte with no distance, one naming events the
 * record does not have, and a YOUNG event cut before its life byte are no events. */
static void test_young_frees_come_where_their_life_bytes_say(void **state)
{
    (void)state;
    uint8_t buf[8 * PF_PK_EVENT_MAX];
    pf_pk_state_t st = {0};
    size_t life[4], n = 0;
    const uint32_t sizes[4] = {32, 48, 64, 80};
    for (int i = 0; i < 4; i++) {   /* A B C D at 100 110 120 130, D in the Python object domain */
        n += pf_pk_encode_alloc(buf + n, &st, 100 + 10 * (uint64_t)i, 0x1000 + 0x100 * (uint64_t)i, sizes[i], 1,
                                i == 3 ? PF_DOMAIN_PYOBJ : PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 1);
        life[i] = n - 1;
    }
    n += pf_pk_encode_free(buf + n, &st, 140, 0x1300, PF_FREE_AUX(PF_DOMAIN_PYOBJ, 0));     /* D, a FREE */
    buf[life[0]] = pf_pk_life(1, PF_OBJ_TUPLE);    /* A after B */
    buf[life[1]] = pf_pk_life(0, PF_OBJ_STR);      /* B right after itself: before A */
    buf[life[3]] = 0;                               /* D: its own FREE */
    /* C stays live */
    const struct { uint16_t type; uint64_t t, addr; uint16_t aux; } want[] = {
        {PF_REC_ALLOC_SHORT, 100, 0x1000, 0},
        {PF_REC_ALLOC_SHORT, 110, 0x1100, 0},
        {PF_REC_FREE, 110, 0x1100, PF_FREE_AUX(PF_DOMAIN_MALLOC, PF_OBJ_STR)},
        {PF_REC_FREE, 110, 0x1000, PF_FREE_AUX(PF_DOMAIN_MALLOC, PF_OBJ_TUPLE)},
        {PF_REC_ALLOC_SHORT, 120, 0x1200, 0},
        {PF_REC_ALLOC_SHORT, 130, 0x1300, 0},
        {PF_REC_FREE, 140, 0x1300, PF_FREE_AUX(PF_DOMAIN_PYOBJ, 0)},
    };
    pf_pk_reader_t r;
    pf_pk_reader_start(&r);
    const uint8_t *p = buf;
    pf_pk_event_t d = {0};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        assert_int_equal(pf_pk_decode(&p, buf + n, &r, &d), 1);
        assert_int_equal(d.type, want[i].type);
        assert_true(d.p.t_ns == want[i].t && d.p.addr == want[i].addr);
        if (d.type == PF_REC_FREE)
            assert_int_equal(d.aux, want[i].aux);
    }
    assert_int_equal(pf_pk_decode(&p, buf + n, &r, &d), 0);

    uint32_t events;
    uint64_t first, last;
    assert_int_equal(pf_pk_span(buf, n, 0, &events, &first, &last), 0);
    assert_true(events == 7 && first == 100 && last == 140);
    const uint8_t bad_life[3] = {(uint8_t)(PF_OBJ_STR << 4), pf_pk_life(5, 0), 0};
    for (int how = 0; how < 3; how++) {
        uint8_t cut[sizeof buf];
        memcpy(cut, buf, n);
        cut[life[2]] = bad_life[how];   /* no distance; five events after C: the record has two */
        size_t len = how == 2 ? life[0] : n;    /* A cut before its life byte */
        assert_int_equal(pf_pk_span(cut, len, 0, &events, &first, &last), -1);
    }
}

/* The model's whole sweep alike: totals, rows and their timelines. */
static void assert_same_model(const pf_model_t *a, const pf_model_t *b)
{
    assert_true(a->total.alloc_bytes == b->total.alloc_bytes && a->total.leaked_bytes == b->total.leaked_bytes);
    assert_true(a->total.peak_bytes == b->total.peak_bytes);
    assert_int_equal(a->n_lines, b->n_lines);
    for (size_t i = 0; i < a->n_lines; i++) {
        assert_string_equal(pf_model_str(a, a->lines[i].file), pf_model_str(b, b->lines[i].file));
        assert_int_equal(a->lines[i].line, b->lines[i].line);
        assert_true(a->lines[i].s.alloc_bytes == b->lines[i].s.alloc_bytes);
        assert_true(a->lines[i].s.leaked_bytes == b->lines[i].s.leaked_bytes);
        assert_true(a->lines[i].s.peak_bytes == b->lines[i].s.peak_bytes);
        assert_memory_equal(a->lines[i].s.timeline, b->lines[i].s.timeline, sizeof a->lines[i].s.timeline);
        assert_true(a->lines[i].s.area_ns == b->lines[i].s.area_ns);
    }
}

static void b_packed(builder_t *b, const uint8_t *payload, size_t n)
{
    pf_rec_header_t h = {PF_REC_PACKED, 0, (uint32_t)(sizeof h + n)};
    assert_true(b->pos + pf_align8(h.bytes) <= b->chunk_end);
    memcpy(b->buf + b->pos, &h, sizeof h);
    memcpy(b->buf + b->pos + sizeof h, payload, n);
    b->pos += pf_align8(h.bytes);
}

/* One process, thread 1: code, three stacks, then the events, packed (split in records of `per_record`
 * events, a MARK between two of them) or one record each; with `back`, a FREE record dated before the
 * events last, which sends the loader to its sorted array. */
static const char *build(const char *name, int packed, int per_record, int back)
{
    test_event_t ev[N_EVENTS];
    make_events(ev);
    builder_t b;
    b_init(&b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(&b, 1);
    b_code(&b, 1, "/s/app.py", "main", 20);
    b_code(&b, 2, "/s/app.py", "helper", 40);
    uint32_t one = 1, two = 2, both[2] = {2, 1};
    b_stack(&b, 1, 1, &one);
    b_stack(&b, 2, 1, &two);
    b_stack(&b, 3, 2, both);
    static uint8_t buf[N_EVENTS * PF_PK_EVENT_MAX];
    for (int from = 0; from < N_EVENTS; from += per_record) {
        int to = from + per_record < N_EVENTS ? from + per_record : N_EVENTS;
        if (packed) {
            b_packed(&b, buf, encode(ev, from, to, buf));
        } else {
            for (int i = from; i < to; i++) {
                if (ev[i].is_alloc) {
                    pf_rec_alloc_short_t a = {ev[i].t, ev[i].addr, ev[i].size, ev[i].stack_id};
                    b_rec(&b, PF_REC_ALLOC_SHORT, ev[i].aux, &a, sizeof a);
                } else {
                    pf_rec_free_t f = {ev[i].t, ev[i].addr};
                    b_rec(&b, PF_REC_FREE, ev[i].aux, &f, sizeof f);
                }
            }
        }
        if (from == 0)
            b_mark(&b, ev[to - 1].t, PF_MARK_LABEL);
    }
    if (back)
        b_free(&b, 500, ev[0].addr);
    return b_save(&b, name, 0);
}

static void test_packed_and_unpacked_give_one_model(void **state)
{
    (void)state;
    for (int back = 0; back < 2; back++) {
        char na[32], nb[32], nc[32];
        snprintf(na, sizeof na, "plain%d.pflow", back);
        snprintf(nb, sizeof nb, "packed%d.pflow", back);
        snprintf(nc, sizeof nc, "split%d.pflow", back);
        pf_model_t *a = load_ok(build(na, 0, 300, back));
        pf_model_t *b = load_ok(build(nb, 1, 300, back));
        pf_model_t *c = load_ok(build(nc, 1, 1, back));
        assert_true(a->total.alloc_bytes > 100000000.0);
        assert_same_model(a, b);
        assert_same_model(a, c);
        pf_model_free(a);
        pf_model_free(b);
        pf_model_free(c);
    }
}

/* One process, thread 1, in its chunk: main() of /s/app.py and stack 1, that one frame. */
static void b_one_stack(builder_t *b)
{
    b_init(b, PF_HDR_EXACT | PF_HDR_ROOT, 1);
    b_chunk(b, 1);
    b_code(b, 1, "/s/app.py", "main", 20);
    uint32_t one = 1;
    b_stack(b, 1, 1, &one);
}

/* The profile at path is refused, in the strict walk's sentence for a packed record's bad bytes. */
static void assert_refused_as_no_event(const char *path)
{
    pf_model_t *m = NULL;
    pf_load_opts_t o = {0};
    char err[512];
    assert_int_not_equal(pf_model_load(path, &o, &m, err, sizeof err), 0);
    assert_non_null(strstr(err, "packed record holds bytes that are no event"));
}

/* A chunk whose packed record ends in an event the writer began but did not finish: the length covers
 * it, its tag is still 0. The events before it count, that one does not, and nothing is said. Then the
 * same record with a field running past its length: refused, naming the offset. */
static void test_truncated_and_corrupt_packed_records(void **state)
{
    (void)state;
    uint8_t buf[4 * PF_PK_EVENT_MAX];
    pf_pk_state_t st = {0};
    size_t n = pf_pk_encode_alloc(buf, &st, 100, 0x1000, 1000, 1, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 0);
    n += pf_pk_encode_alloc(buf + n, &st, 200, 0x2000, 500, 1, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 0);
    size_t whole = n;
    n += pf_pk_encode_alloc(buf + n, &st, 300, 0x3000, 70, 1, PF_DOMAIN_MALLOC, PF_ALLOC_EXACT, 0);
    for (int corrupt = 0; corrupt < 2; corrupt++) {
        builder_t b;
        b_one_stack(&b);
        uint8_t cut[sizeof buf];
        memcpy(cut, buf, n);
        if (corrupt)
            cut[n - 1] |= 0x80;     /* the last varint goes on past the length */
        else
            cut[whole] = 0;         /* the third event's tag not stored yet */
        b_packed(&b, cut, n);
        const char *path = b_save(&b, corrupt ? "corrupt.pflow" : "cut.pflow", 0);
        if (!corrupt) {
            pf_model_t *m = load_ok(path);
            assert_true(m->total.alloc_bytes == 1500.0);
            assert_true(find_line(m, "/s/app.py", 20)->s.leaked_bytes == 1500.0);
            pf_model_free(m);
            continue;
        }
        assert_refused_as_no_event(path);
    }
}

/* A walk that skims packed records (pf_file_t.skim_packed, the loader's first try) checks each one's first
 * event only; the merge sees the rest. Two packed records of one thread: when an event of the first is
 * dated after the second's first event, the model is the one of the same events one record each (whose
 * walk sees the stream go back and sorts); when the first holds bytes that are no event past its first
 * event, the profile is refused in the strict walk's sentence. */
static void test_what_only_the_merge_sees(void **state)
{
    (void)state;
    typedef struct { int alloc; uint64_t t, addr; uint32_t size; } ev_t;
    const ev_t first[] = {{1, 100, 0x1000, 1000000}, {1, 200, 0x2000, 10}, {0, 900, 0x1000, 0}};
    const ev_t second[] = {{1, 300, 0x3000, 2000000}, {0, 400, 0x3000, 0}};
    const ev_t *recs[2] = {first, second};
    const int lens[2] = {3, 2};
    pf_model_t *models[2] = {NULL, NULL};
    for (int how = 0; how < 3; how++) {  /* one record each, packed, packed with a bad tag */
        builder_t b;
        b_one_stack(&b);
        for (int r = 0; r < 2; r++) {
            uint8_t buf[8 * PF_PK_EVENT_MAX];
            pf_pk_state_t st = {0};
            size_t n = 0, last_tag = 0;
            for (int i = 0; i < lens[r]; i++) {
                const ev_t *e = &recs[r][i];
                uint16_t aux = PF_ALLOC_SHORT_AUX(PF_DOMAIN_MALLOC, PF_ALLOC_EXACT | PF_ALLOC_STACK_REF);
                if (how == 0 && e->alloc) {
                    pf_rec_alloc_short_t a = {e->t, e->addr, e->size, 1};
                    b_rec(&b, PF_REC_ALLOC_SHORT, aux, &a, sizeof a);
                } else if (how == 0) {
                    pf_rec_free_t f = {e->t, e->addr};
                    b_rec(&b, PF_REC_FREE, PF_FREE_AUX(PF_DOMAIN_MALLOC, 0), &f, sizeof f);
                }
                last_tag = n;
                n += e->alloc ? pf_pk_encode_alloc(buf + n, &st, e->t, e->addr, e->size, 1, PF_DOMAIN_MALLOC,
                                                   PF_ALLOC_EXACT, 0)
                              : pf_pk_encode_free(buf + n, &st, e->t, e->addr, PF_FREE_AUX(PF_DOMAIN_MALLOC, 0));
            }
            if (how == 2 && r == 0)
                buf[last_tag] |= 0x80;  /* a FREE's reserved bit: no event */
            if (how)
                b_packed(&b, buf, n);
        }
        char name[32];
        snprintf(name, sizeof name, "merge_sees%d.pflow", how);
        const char *path = b_save(&b, name, 0);
        if (how == 2) {
            assert_refused_as_no_event(path);
            continue;
        }
        models[how] = load_ok(path);
        assert_true(models[how]->total.peak_bytes == 3000010.0);   /* in time order: all three at 300 */
    }
    assert_same_model(models[0], models[1]);
    pf_model_free(models[0]);
    pf_model_free(models[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_varint_and_zigzag),
        cmocka_unit_test(test_events_decode_as_encoded),
        cmocka_unit_test(test_young_frees_come_where_their_life_bytes_say),
        cmocka_unit_test(test_packed_and_unpacked_give_one_model),
        cmocka_unit_test(test_truncated_and_corrupt_packed_records),
        cmocka_unit_test(test_what_only_the_merge_sees),
    };
    return cmocka_run_group_tests(tests, writer_setup, writer_teardown);
}
