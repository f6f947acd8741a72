/* pf_model_events.c - the events that change memory, in time order, for the sweep (see pf_loader_int.h).
 *
 * Each thread writes its records in time order along its chunks, so the events of a profile are a few
 * ordered streams, one per (process, thread): while loading, each stream keeps only where its runs of
 * records start (one entry a chunk, or a part of a chunk that changed writer), and the sweep merges the
 * streams with a heap, reading each event from the mapped file when its turn comes. Ties go to the lower
 * process index, then the lower file offset: the order the loader walks the files in. No array of events
 * is built and no event is sorted.
 *
 * The mapped files' pages are given back as the loader's walk leaves them behind (4 MiB at a time: chunk by
 * chunk made the report 60% slower, as what is read again, a stack or a line table, must come back from
 * the page cache) and as the merge does (a run's pages once its last event was swept), so the reporter's
 * resident memory is its tables, not the profile. What is read again later (a stack, a code object's line table) comes back from the page
 * cache.
 *
 * A stream whose times go back (watch's records are written after the fact, with the time they happened)
 * makes the loader collect every event into an array instead, in that same walk order, which is sorted
 * here: the same order either way.
 *
 * The loader's walk skims packed records (pf_file_t.skim_packed): it decodes a record's first event, for
 * the order of the streams, and a stream's last packed record whole (pf_events_settle), for the run's end;
 * the rest of their events are decoded once, by the merge, which checks them as it goes (decoding every
 * event twice was a tenth of an exact profile's report). What only a whole decode can find, bytes that are
 * no event or a time going back inside a record, ends the merge (pf_event_iter_t.broken), and the loader
 * loads again with a walk that decodes them all (loader_t.strict).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pf_loader_int.h"

/* Gives back the whole pages of file bytes [from, to) (contents stay in the file and the page cache). */
static void drop_pages(const pf_file_t *f, uint64_t from, uint64_t to)
{
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t a = (from + page - 1) / page * page, b = to / page * page;
    if (b > a)
        madvise((void *)(f->data + a), b - a, MADV_DONTNEED);
}

/* ---- loading: the streams ---- */

/* A stream's first event, or one after it went back in time: pf_events_record's rare case. */
void pf_events_new_stream(loader_t *L, const pf_record_t *r, uint64_t t, uint64_t t_end, uint64_t key)
{
    int created = 0;
    uint64_t *v = pf_map_put(&L->stream_index, key, &created);
    if (created) {
        stream_t *s = PF_VEC_PUSH(L->streams, L->n_streams, L->cap_streams);
        s->proc = L->cur;
        *v = L->n_streams - 1;
    }
    L->last_stream_key = key;
    L->last_stream = *v;
    stream_t *s = &L->streams[L->last_stream];
    if (!created && s->open_packed && !r->packed_skimmed)
        pf_events_settle(L, s);
    if (!created && t < s->last_t) {
        L->unordered = 1;   /* the loader then collects every event into an array (pf_model.c) */
        return;
    }
    s->last_t = t_end;
    s->open_packed = r->packed_skimmed ? r->offset : 0;
    if (created || s->last_run != L->run) {
        *PF_VEC_PUSH(s->starts, s->n_starts, s->cap_starts) = r->offset;
        s->last_run = L->run;
    }
}

/* ---- packed events (PF_REC_PACKED): many ALLOC_SHORT and FREE events in one record ---- */

void pf_events_settle(loader_t *L, stream_t *s)
{
    const pf_file_t *f = &L->procs[s->proc].file;
    pf_rec_header_t h;
    memcpy(&h, f->data + s->open_packed, sizeof h);
    uint32_t events;
    uint64_t first, last;
    if (pf_pk_span(f->data + s->open_packed + sizeof h, h.bytes - sizeof h, 0, &events, &first, &last) < 0)
        L->redo = 1;    /* the strict walk says what is wrong, and where */
    s->open_packed = 0;
    last += L->m->procs[s->proc].offset_ns;
    if (last > s->last_t)
        s->last_t = last;
    if (last > L->t_last)
        L->t_last = last;
    if (last > L->procs[s->proc].last_t)
        L->procs[s->proc].last_t = last;
}

void pf_events_settle_process(loader_t *L, uint32_t proc)
{
    for (size_t i = 0; i < L->n_streams; i++)
        if (L->streams[i].proc == proc && L->streams[i].open_packed)
            pf_events_settle(L, &L->streams[i]);
}

int pf_events_packed_span(const loader_t *L, const pf_record_t *r, uint64_t *first, uint64_t *last)
{
    uint64_t offset = L->m->procs[L->cur].offset_ns;
    *first = r->packed_first_ns + offset;     /* the walk decoded them as it checked the record */
    *last = r->packed_last_ns + offset;
    return r->packed_events != 0;
}

static void collect_packed(loader_t *L, const pf_record_t *r)
{
    const uint8_t *at = r->payload, *end = at + r->payload_bytes;
    pf_pk_reader_t st;
    pf_pk_event_t ev;
    pf_pk_reader_start(&st);
    uint32_t offset8 = (uint32_t)(((const unsigned char *)r->payload - L->procs[L->cur].file.data) >> 3);
    while (pf_pk_decode(&at, end, &st, &ev) > 0) {
        uint64_t t = ev.p.t_ns + L->m->procs[L->cur].offset_ns;
        if (!pf_events_in_window(L, ev.type, t))
            continue;
        /* seq: 1 + its index, as pf_events_collect numbers an event of its own record (it was the index,
         * which an event of its own record just before took too: a FREE there then read this one's
         * payload) */
        event_t *e = PF_VEC_PUSH(L->events, L->n_events, L->cap_events);
        *e = (event_t){.t = t, .seq = (uint32_t)L->n_events, .offset8 = offset8, .type = ev.type,
                       .aux = ev.aux, .proc = L->cur};
        size_t cap = L->cap_packed;
        *PF_VEC_PUSH(L->packed_payloads, L->n_packed, L->cap_packed) = ev.p;
        if (L->cap_packed != cap)
            L->packed_seqs = pf_xrealloc(L->packed_seqs, L->cap_packed * sizeof *L->packed_seqs);
        L->packed_seqs[L->n_packed - 1] = e->seq;
    }
}

void pf_events_collect(loader_t *L, const pf_record_t *r)
{
    if (!pf_events_is_event(r->type))
        return;
    if (r->type == PF_REC_PACKED) {
        collect_packed(L, r);
        return;
    }
    uint64_t t = pf_events_time(L, L->cur, r->payload);
    if (!pf_events_in_window(L, r->type, t))
        return;
    event_t *e = PF_VEC_PUSH(L->events, L->n_events, L->cap_events);
    e->t = t;
    e->seq = (uint32_t)L->n_events;
    e->type = r->type;
    e->aux = r->aux;
    e->proc = L->cur;
    e->offset8 = (uint32_t)(((const unsigned char *)r->payload - L->procs[L->cur].file.data) >> 3);  /* pf_file_open */
}

/* The index + 1 of the packed event numbered seq in the walk's array, or 0 for an event of its own record. */
static uint32_t packed_index(const loader_t *L, const event_t *e)
{
    if (!L->n_packed || (e->type != PF_REC_ALLOC_SHORT && e->type != PF_REC_FREE))
        return 0;
    size_t lo = 0, hi = L->n_packed;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (L->packed_seqs[mid] < e->seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < L->n_packed && L->packed_seqs[lo] == e->seq ? (uint32_t)lo + 1 : 0;
}

void pf_events_new_run(loader_t *L, uint64_t chunk)
{
    if (chunk >= L->walk_dropped + (4u << 20)) {    /* walked: give back 4 MiB at a time */
        drop_pages(&L->procs[L->cur].file, L->walk_dropped, chunk);
        L->walk_dropped = chunk;
    }
    L->run++;
    L->run_chunk = chunk;
}

void pf_events_free_streams(loader_t *L)
{
    for (size_t i = 0; i < L->n_streams; i++)
        free(L->streams[i].starts);
    free(L->streams);
    L->streams = NULL;
    L->n_streams = L->cap_streams = 0;
    L->last_stream_key = 0;
    pf_map_free(&L->stream_index);
}

void pf_events_free_packed(loader_t *L)
{
    free(L->packed_payloads);
    free(L->packed_seqs);
    L->packed_payloads = NULL;
    L->packed_seqs = NULL;
    L->n_packed = L->cap_packed = 0;
}

/* ---- the array, when a stream was out of order ---- */

static inline int event_before(const event_t *x, const event_t *y)
{
    return x->t != y->t ? x->t < y->t : x->seq < y->seq;
}

/* Merges the ordered runs a[0..na) and b[0..nb) into out. */
static void merge_runs(const event_t *a, size_t na, const event_t *b, size_t nb, event_t *out)
{
    size_t i = 0, j = 0;
    while (i < na && j < nb)
        *out++ = event_before(&b[j], &a[i]) ? b[j++] : a[i++];
    memcpy(out, a + i, (na - i) * sizeof *a);
    memcpy(out + (na - i), b + j, (nb - j) * sizeof *b);
}

/* A natural merge sort: the array comes as runs already mostly in order, so find the runs and merge
 * neighbours until one is left (qsort took ~22 passes, whatever the order). */
void pf_events_sort(event_t *ev, size_t n)
{
    size_t *starts = NULL, n_runs = 0, cap_runs = 0;
    *PF_VEC_PUSH(starts, n_runs, cap_runs) = 0;
    for (size_t i = 1; i < n; i++)
        if (event_before(&ev[i], &ev[i - 1]))
            *PF_VEC_PUSH(starts, n_runs, cap_runs) = i;
    if (n_runs > 1) {
        event_t *buf = pf_xmalloc(n * sizeof *ev), *src = ev, *dst = buf;
        *PF_VEC_PUSH(starts, n_runs, cap_runs) = n;     /* the end of the last run */
        n_runs--;
        while (n_runs > 1) {
            size_t kept = 0, r = 0;
            for (; r + 1 < n_runs; r += 2) {
                size_t a = starts[r], b = starts[r + 1], end = starts[r + 2];
                merge_runs(src + a, b - a, src + b, end - b, dst + a);
                starts[kept++] = a;
            }
            if (r < n_runs) {   /* an odd run out: carried over as it is */
                memcpy(dst + starts[r], src + starts[r], (starts[r + 1] - starts[r]) * sizeof *ev);
                starts[kept++] = starts[r];
            }
            starts[kept] = n;
            n_runs = kept;
            event_t *t = src;
            src = dst;
            dst = t;
        }
        if (src != ev)
            memcpy(ev, src, n * sizeof *ev);
        free(buf);
    }
    free(starts);
}

/* ---- the sweep's side: one event at a time ---- */

/* The pages of a run c has read go back in batches of 4 MiB: a stream's runs mostly follow one another
 * in the file, a few chunks of other records between them, and giving each 64 KiB run back by itself was
 * 8% of an exact profile's sweep (each madvise flushes the TLB). A run more than a batch past the last
 * one sends the batch back first. Giving back bytes between them that another stream has still to read
 * is harmless: they are read again from the file. */
static void give_back_run(const pf_file_t *f, pf_event_cursor_t *c, uint64_t from, uint64_t to, int last)
{
    const uint64_t batch = 4u << 20;
    if (c->drop_to && (from < c->drop_to || from > c->drop_to + batch || to - c->drop_from >= batch)) {
        drop_pages(f, c->drop_from, c->drop_to);
        c->drop_from = c->drop_to = 0;
    }
    if (!c->drop_to)
        c->drop_from = from;
    c->drop_to = to;
    if (last) {
        drop_pages(f, c->drop_from, c->drop_to);
        c->drop_from = c->drop_to = 0;
    }
}

/* A stream's next event comes before its last, or is no event: the iteration ends (see
 * pf_event_iter_t.broken). Returns 0, as at a stream's end. */
static int stream_broken(pf_event_iter_t *it)
{
    it->broken = 1;
    return 0;
}

/* Moves c to its stream's next event; 0 when the stream is done. Inline: it runs once a record of every
 * stream, in pf_events_next_batch's loop. */
static inline __attribute__((always_inline)) int cursor_next(pf_event_iter_t *it, pf_event_cursor_t *c)
{
    const loader_t *L = it->L;
    const stream_t *s = &L->streams[c->stream];
    const pf_file_t *f = &L->procs[s->proc].file;
    const uint64_t last = L->procs[s->proc].last_offset;
    for (;;) {
        if (c->packed_at) {     /* inside a packed record */
            pf_pk_event_t ev;
            int rc = pf_pk_decode(&c->packed_at, c->packed_end, &c->packed_state, &ev);
            if (rc <= 0) {
                c->packed_at = NULL;
                if (rc < 0)
                    return stream_broken(it);
                continue;
            }
            c->ev.t = ev.p.t_ns + L->m->procs[s->proc].offset_ns;
            if (c->ev.t < c->last_t)
                return stream_broken(it);
            c->last_t = c->ev.t;
            if (!pf_events_in_window(L, ev.type, c->ev.t))
                continue;
            c->ev.seq = 1;
            c->ev.type = ev.type;
            c->ev.aux = ev.aux;
            c->packed_payload = ev.p;
            return 1;
        }
        if (__builtin_expect(c->off == 0 || c->off + sizeof(pf_rec_header_t) > c->end, 0)) {
            if (c->off)     /* the run filled its chunk to the end */
                give_back_run(f, c, c->run_start, c->off, c->run == s->n_starts);
            if (c->run == s->n_starts)
                return 0;
            const uint64_t cb = f->header.chunk_bytes;
            c->off = c->run_start = s->starts[c->run++];
            uint64_t chunk_end = PF_HEADER_BYTES + (c->off - PF_HEADER_BYTES) / cb * cb + cb;
            c->end = chunk_end < f->size ? chunk_end : f->size;   /* the last chunk may be cut short */
            continue;
        }
        pf_rec_header_t h;
        memcpy(&h, f->data + c->off, sizeof h);
        /* the end of the run: the chunk's end, a record cut off by the file's end, another writer, or
         * where the loader's walk stopped (a corrupt record: nothing after it was read) */
        uint32_t span = h.type == PF_REC_PACKED ? pf_align8(h.bytes) : h.bytes;
        if (__builtin_expect(c->off > last || h.type == PF_REC_END || h.type == PF_REC_WRITER ||
                             c->off + span > c->end, 0)) {
            give_back_run(f, c, c->run_start, c->off, c->run == s->n_starts);
            c->off = 0;
            continue;
        }
        uint64_t at = c->off;
        c->off += span;
        if (!pf_events_is_event(h.type))
            continue;
        if (h.type == PF_REC_PACKED) {  /* its events come from the top of the loop */
            c->packed_at = f->data + at + sizeof h;
            c->packed_end = f->data + at + h.bytes;
            pf_pk_reader_start(&c->packed_state);
            c->ev.offset8 = (uint32_t)((at + sizeof h) >> 3);
            c->ev.proc = s->proc;
            continue;
        }
        c->ev.t = pf_events_time(L, s->proc, f->data + at + sizeof h);
        if (c->ev.t < c->last_t)
            return stream_broken(it);
        c->last_t = c->ev.t;
        if (!pf_events_in_window(L, h.type, c->ev.t))
            continue;
        c->ev.seq = 0;
        c->ev.offset8 = (uint32_t)((at + sizeof h) >> 3);
        c->ev.type = h.type;
        c->ev.aux = h.aux;
        c->ev.proc = s->proc;
        return 1;
    }
}

/* Heap order: time, then the walk order (process, offset). */
static int cursor_before(const pf_event_cursor_t *a, const pf_event_cursor_t *b)
{
    if (a->ev.t != b->ev.t)
        return a->ev.t < b->ev.t;
    if (a->ev.proc != b->ev.proc)
        return a->ev.proc < b->ev.proc;
    return a->ev.offset8 < b->ev.offset8;
}

static void sift_down(pf_event_iter_t *it, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < it->n_heap && cursor_before(&it->heap[l], &it->heap[m]))
            m = l;
        if (r < it->n_heap && cursor_before(&it->heap[r], &it->heap[m]))
            m = r;
        if (m == i)
            return;
        pf_event_cursor_t tmp = it->heap[i];
        it->heap[i] = it->heap[m];
        it->heap[m] = tmp;
        i = m;
    }
}

void pf_events_begin(loader_t *L, pf_event_iter_t *it)
{
    memset(it, 0, sizeof *it);
    it->L = L;
    if (L->unordered) {
        pf_events_sort(L->events, L->n_events);
        return;
    }
    for (size_t i = 0; i < L->n_procs; i++)
        drop_pages(&L->procs[i].file, 0, L->procs[i].file.size);
    it->heap = pf_xcalloc(L->n_streams ? L->n_streams : 1, sizeof *it->heap);
    for (size_t i = 0; i < L->n_streams; i++) {
        pf_event_cursor_t *c = &it->heap[it->n_heap];
        /* afresh: the place may be the last stream's, which had no event (a window left it none) */
        *c = (pf_event_cursor_t){.stream = (uint32_t)i};
        if (cursor_next(it, c))
            it->n_heap++;
    }
    if (it->broken)
        it->n_heap = 0;
    for (size_t i = it->n_heap / 2; i-- > 0;)
        sift_down(it, i);
}

/* The rest of c's packed record, decoded straight into the batch (out and pay from *n, up to max) while
 * its events come before rival's (NULL: none). Every event of one packed record has the same process and
 * offset, so a tie in time goes to c or to the rival for the whole record. Returns 1 when it stopped at
 * an event that comes after the rival's (then c's current event), else 0: the record ended (packed_at
 * NULL), or the batch is full (c's current event is the one already in it: cursor_next moves on). Most of
 * an exact profile's events pass here, not through cursor_next: each is written once, where the sweep
 * reads it, not into the cursor and then copied (which read back as whole structures what was stored
 * field by field, stalling on each). */
static inline __attribute__((always_inline)) int pack_run(pf_event_iter_t *it, pf_event_cursor_t *c,
                                                          const pf_event_cursor_t *rival, event_t *out,
                                                          pf_rec_alloc_short_t *pay, size_t *n, size_t max)
{
    const loader_t *L = it->L;
    const uint32_t proc = c->ev.proc, offset8 = c->ev.offset8;
    const uint64_t clock = L->m->procs[proc].offset_ns;
    uint64_t last_t = c->last_t;
    uint64_t rival_t = UINT64_MAX;
    int ties_mine = 1;  /* with no rival, every time is before it */
    if (rival) {
        rival_t = rival->ev.t;
        ties_mine = proc != rival->ev.proc ? proc < rival->ev.proc : offset8 < rival->ev.offset8;
    }
    size_t k = *n;
    while (k < max) {
        pf_pk_event_t ev;
        int rc = pf_pk_decode(&c->packed_at, c->packed_end, &c->packed_state, &ev);
        if (rc <= 0) {
            c->packed_at = NULL;
            if (rc < 0)
                stream_broken(it);
            break;
        }
        uint64_t t = ev.p.t_ns + clock;
        if (t < last_t) {   /* a wrapped delta: times only grow along a record */
            c->packed_at = NULL;
            stream_broken(it);
            break;
        }
        last_t = t;
        if (!pf_events_in_window(L, ev.type, t))
            continue;
        if (t > rival_t || (t == rival_t && !ties_mine)) {
            c->last_t = last_t;
            c->ev.t = t;
            c->ev.seq = 1;
            c->ev.type = ev.type;
            c->ev.aux = ev.aux;
            c->packed_payload = ev.p;
            *n = k;
            return 1;
        }
        out[k] = (event_t){.t = t, .seq = (uint32_t)k + 1, .offset8 = offset8, .type = ev.type, .aux = ev.aux,
                           .proc = proc};
        pay[k] = ev.p;
        k++;
    }
    c->last_t = last_t;
    *n = k;
    return 0;
}

void pf_events_follow_begin(loader_t *L, pf_event_iter_t *it)
{
    memset(it, 0, sizeof *it);
    it->L = L;
    it->follow = 1;
    it->heap = pf_xcalloc(1, sizeof *it->heap);
}

/* A followed stream's cursor, out of events when it last ran, takes the next one if the walk has brought
 * it since (its place in its runs is kept: see cursor_next). Returns 0 when there is none yet. */
static int follow_resume(pf_event_iter_t *it)
{
    if (it->L->n_streams != 1 || it->broken)
        return 0;
    if (!it->follow_started) {
        it->heap[0] = (pf_event_cursor_t){.stream = 0};
        it->follow_started = 1;
    }
    if (!cursor_next(it, &it->heap[0]))
        return 0;
    it->n_heap = 1;
    return 1;
}

size_t pf_events_next_batch(pf_event_iter_t *it, event_t *out, pf_rec_alloc_short_t *pay, size_t max)
{
    size_t n = 0;
    loader_t *L = it->L;
    if (it->follow && !it->n_heap && !follow_resume(it))
        return 0;
    if (L->unordered) {
        n = L->n_events - it->next < max ? L->n_events - it->next : max;
        memcpy(out, L->events + it->next, n * sizeof *out);
        it->next += n;
        for (size_t i = 0; i < n; i++) {
            uint32_t k = packed_index(L, &out[i]);
            out[i].seq = 0;
            if (k) {    /* copied beside the batch, like the merge's: the batch owns what it points to */
                pay[i] = L->packed_payloads[k - 1];
                out[i].seq = (uint32_t)i + 1;
            }
        }
        return n;
    }
    /* A run-level merge: the stream at the top of the heap goes on giving its events while they come
     * before the head of every other stream (the lesser of the root's two children); the heap is sifted
     * only when another stream's turn comes. An exact profile's threads take turns every few thousand
     * events, and a single thread's never. */
    while (n < max && it->n_heap) {
        pf_event_cursor_t *top = &it->heap[0];
        const pf_event_cursor_t *rival = NULL;
        if (it->n_heap > 1)
            rival = it->n_heap > 2 && cursor_before(&it->heap[2], &it->heap[1]) ? &it->heap[2] : &it->heap[1];
        int more;
        for (;;) {
            out[n] = top->ev;
            if (top->ev.seq) {  /* a packed event: its payload beside the batch */
                pay[n] = top->packed_payload;
                out[n].seq = (uint32_t)n + 1;
            }
            n++;
            if (top->packed_at && n < max && pack_run(it, top, rival, out, pay, &n, max)) {
                more = 1;   /* its next event comes after the rival's */
                break;
            }
            more = !it->broken && cursor_next(it, top);
            if (!more || n == max || (rival && !cursor_before(top, rival)))
                break;
        }
        if (__builtin_expect(it->broken, 0)) {
            it->n_heap = 0;     /* what came before is the batch; nothing after it */
            break;
        }
        if (!more)
            it->heap[0] = it->heap[--it->n_heap];
        sift_down(it, 0);
    }
    it->next += n;
    return n;
}

void pf_events_end(pf_event_iter_t *it)
{
    free(it->heap);
    memset(it, 0, sizeof *it);
}
