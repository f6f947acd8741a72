/* pf_watch_glue.c - connects watch/ (PMU samples + watchpoints, the CL algorithm) to the runtime: frame
 * capture and the hibernation test for its signal handlers, code ids, modules and the writer for its
 * drain, and the free hooks' disarm.
 *
 * Watch is asked for by PYFLOW_WATCH; memory profiling never depends on it. When the machine cannot watch
 * (perf_event not permitted, no sampling event, the program owns SIGTRAP) the reason is said once on
 * stderr and written into the profile as a note, and the run goes on without it. "auto" (what `pyflow
 * run` sets unless told --watch or --no-watch) watches copies where debug registers fire, measured cheap
 * there (bench/run_bench.py --watch), and otherwise stays off without a word: emulated watchpoints cost
 * too much to be a default.
 */
#include "pf_unwinder.h"
#include "pf_watch_glue.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <ucontext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pf_codes.h"
#include "pf_eh_pages.h"
#include "pf_modules.h"
#include "pf_objtable.h"
#include "pf_runtime.h"
#include "pf_sys.h"
#include "pf_watch.h"
#include "pf_writer.h"

_Static_assert(sizeof(pf_watch_pyframe_t) == sizeof(pf_pyframe_t), "frame layouts must match");
_Static_assert(offsetof(pf_watch_pyframe_t, lasti_bytes) == offsetof(pf_pyframe_t, lasti_bytes),
               "frame layouts must match");

/* Without debug registers every instruction run while a word is watched traps (16 us a step measured on
 * a PVM guest). A Python loop iteration that repeats an access is a few hundred to a few thousand
 * instructions, so a watch gives up after PF_EMULATED_STEP_LIMIT steps (~65 ms there), and samples come
 * PF_EMULATED_RATE_HZ times a second of CPU time, so that watching costs a bounded multiple of the run. */
#define PF_EMULATED_STEP_LIMIT 4000
#define PF_EMULATED_RATE_HZ 50
/* and stepping keeps within a share of each thread's CPU time (--watch-budget; PF_WATCH_BUDGET_PCT). */
/* With real debug registers: 250 samples per CPU-second kept every bench workload within 1.15x (stores)
 * and 1.23x (loads) on an H100 host; 1000 cost up to 1.67x on a memcpy-bound one. */
#define PF_RATE_HZ 250

static int watch_on;
int pf_watch_glue_wanted;
static pthread_key_t watch_key;
/* 1 once this thread asked for a copy watch: only such a thread has copy watches to expire (a copy's
 * watches are the calling thread's own, pf_watch.h), and the others skip the call on every event. */
static __thread int copies_watched __attribute__((tls_model("initial-exec")));
static const void *type_type;       /* &PyType_Type: object headers point at types */

/* ---- callbacks from signal handlers (async-signal-safe) ---- */

/* The frames' code objects are alive now, in the handler, but maybe not when the pair is drained (a module's
 * code is freed once it has run). So each code pointer is replaced here by its id, looked up lock-free
 * among the code objects the allocation path has already described; the sink's code_id then only unwraps
 * it. A code object never seen before becomes id 0, an unknown frame. */
static int g_capture(pf_watch_pyframe_t *out, int max, int *trunc)
{
    int n = pf_cfg.py ? pf_cfg.py->capture_async(pf_cfg.pid, (pf_pyframe_t *)out, max, trunc) : -1;
    for (int i = 0; i < n; i++)
        out[i].code = (const void *)(uintptr_t)pf_codes_lookup(out[i].code);
    return n;
}

/* Changes whenever this thread allocates: two accesses with the same Python stack and the same epoch
 * happened inside one native call. */
static uint64_t g_epoch(void) { return (uint64_t)pf_tls.sampler.countdown; }

/* Inside pyflow, or inside an allocator pyflow wraps: nothing of the program's own to watch. */
static int g_hibernating(void) { return pf_tls.guard != 0; }

/* The dynamic loader's text: an access trapped there may hold the loader's lock mid-update. */
static uint64_t loader_lo, loader_hi;
/* The native frames of a watched access, walked from the signal context by the libraries' DWARF unwind
 * tables (numpy, BLAS and the interpreter are built without frame pointers, so following rbp gives junk
 * past the first frame, and the hybrid path never reaches the interpreter loop where the Python frames
 * join), with the fast walk's rules (pf_unwinder_signal_walk), not libunwind: libunwind finds each
 * frame's tables with dl_iterate_phdr, which takes the loader's lock, and a watch on a word of the
 * loader's own (a store sampled there) trapped in the middle of the loader taking that lock: the handler
 * then waited for it forever (seen as a numpy import hung under --watch=stores). The rules are found
 * without a lock (_dl_find_object). Returns -1, for the engine's frame-pointer walk, inside pyflow (the
 * trap may have interrupted a walk filling the rules) and inside the dynamic loader. */
static int g_native_unwind(const void *uc, uint64_t *ips, int max)
{
    if (pf_tls.guard != 0)
        return -1;
    const ucontext_t *ctx = uc;
    uint64_t pc = (uint64_t)ctx->uc_mcontext.gregs[REG_RIP];
    if (pc >= loader_lo && pc < loader_hi)
        return -1;
    int n = pf_unwinder_signal_walk(&pf_tls, uc, ips, max, pf_eval_lo, pf_eval_hi);
    return n > 0 ? n : -1;
}

/* ---- callbacks from drain (normal context) ---- */

static int read_word(uintptr_t addr, uint64_t *out)
{
    return pf_sys_read_own((const void *)addr, out, 8);
}

/* 1 when v points at a type object: its ob_type is PyType_Type or a metatype whose type is PyType_Type. */
static int is_type_pointer(uint64_t v)
{
    if (!type_type || v < 4096 || (v & 7))
        return 0;
    uint64_t t1, t2;
    if (read_word((uintptr_t)v + 8, &t1) != 0)
        return 0;
    if (t1 == (uint64_t)(uintptr_t)type_type)
        return 1;
    return t1 >= 4096 && !(t1 & 7) && read_word((uintptr_t)t1 + 8, &t2) == 0 &&
           t2 == (uint64_t)(uintptr_t)type_type;
}

/* ob_refcnt and ob_type words (and the GC header before a tracked object) are the interpreter's
 * bookkeeping, not the program's data: a type word holds a type pointer, a refcount word sits just
 * before one. */
static int g_is_header(uintptr_t a)
{
    pf_objinfo_t o;
    if (pf_objtable_find_start(a, 24, &o) && pf_domain_is_python(o.domain) && a - o.addr < 32)
        return 1;
    uint64_t w0, w1;
    a &= ~(uintptr_t)7;
    if (read_word(a, &w0) == 0 && is_type_pointer(w0))
        return 1;
    return read_word(a + 8, &w1) == 0 && is_type_pointer(w1);
}

static size_t g_usable(void *p) { return pf_host.malloc_usable_size ? pf_host.malloc_usable_size(p) : 0; }

static uint32_t s_code_id(void *ctx, const void *code)
{
    (void)ctx;
    return (uint32_t)(uintptr_t)code;   /* already an id: see g_capture */
}
static void *s_reserve(void *ctx, uint32_t bytes) { return pf_writer_reserve(ctx, bytes); }
static void s_commit(void *ctx, void *rec, uint16_t type, uint16_t aux, uint32_t bytes)
{
    pf_writer_commit(ctx, rec, type, aux, bytes);
}
static uint64_t s_now(void *ctx)
{
    (void)ctx;
    return pf_now_ns();
}
static void s_note_native(void *ctx, const uint64_t *ips, int n) { pf_modules_note(ctx, ips, n); }

static pf_watch_sink_t sink_of(pf_tls_t *t)
{
    pf_watch_sink_t s = {t, s_code_id, s_reserve, s_commit, s_now, s_note_native};
    return s;
}

static void thread_gone(void *arg)
{
    (void)arg;
    pf_tls_t *t = &pf_tls;
    pf_guard_enter(t);
    pf_watch_sink_t sink = sink_of(t);
    pf_watch_thread_end(&sink);
    pf_guard_leave(t);
}

static unsigned parse_modes(const char *s)
{
    unsigned m = 0;
    if (strstr(s, "stores") || strstr(s, "all"))
        m |= PF_WATCH_MODE_STORES;
    if (strstr(s, "loads") || strstr(s, "all"))
        m |= PF_WATCH_MODE_LOADS;
    if (strstr(s, "copies") || strstr(s, "all"))
        m |= PF_WATCH_MODE_COPIES;
    return m;
}

static void ignore_object_of(pf_watch_config_t *c, int slot, const void *code)
{
    uint64_t lo, hi;
    if (code && pf_modules_text_range(code, &lo, &hi)) {
        c->ignore[slot].lo = lo;
        c->ignore[slot].hi = hi;
    }
}

/* A note for the profile, written by the first slow path (the constructor runs before the thread's
 * chunk exists). */
char pf_watch_glue_note[320];
static int said_no_fds;

static void note_later(const char *text)
{
    snprintf(pf_watch_glue_note, sizeof pf_watch_glue_note, "%s", text);
    __atomic_store_n(&pf_watch_glue_wanted, 1, __ATOMIC_RELAXED);
}

static void say_off(const char *why)
{
    char note[320];
    pf_log("watch is off: %s (memory and copy profiling go on)", why);
    snprintf(note, sizeof note, "watch is off: %s", why);
    note_later(note);
}

int pf_watch_glue_init(pf_tls_t *t)
{
    (void)t;
    const char *modes = getenv(PF_ENV_WATCH);
    int by_default = modes && strcmp(modes, "auto") == 0;
    if (!modes || (!by_default && !parse_modes(modes)))
        return 0;
    pf_watch_config_t c;
    memset(&c, 0, sizeof c);
    c.modes = by_default ? PF_WATCH_MODE_COPIES : parse_modes(modes);
    c.event = getenv(PF_ENV_WATCH_EVENT);
    if (c.event && !*c.event)
        c.event = NULL;
    const char *period = getenv(PF_ENV_WATCH_PERIOD);
    c.period = period && *period ? strtoull(period, NULL, 10) : 0;
    const char *seed = getenv(PF_ENV_WATCH_SEED);
    c.seed = seed && *seed ? strtoull(seed, NULL, 10) : 1;
    c.rate_hz = PF_RATE_HZ;
    c.py_capture = g_capture;
    c.thread_epoch = g_epoch;
    c.hibernating = g_hibernating;
    c.is_object_header = g_is_header;
    c.usable_size = g_usable;
    c.foreign_signal = pf_host.foreign_signal;
    /* samples in pyflow's own code are pyflow's work; in the dynamic loader, dlopen's. Samples in the
     * interpreter itself are dropped too, as PieProf does: its own loads repeat by design (type words,
     * dict and constant lookups, ~95% "redundant" in every program measured), which would drown the
     * inefficiencies of the program's use of native libraries (numpy's subscripts, a native routine
     * called again with the same arguments). The repeat of a watch may still be in the interpreter. */
    ignore_object_of(&c, 0, (const void *)pf_watch_glue_init);
    ignore_object_of(&c, 1, dlsym(RTLD_DEFAULT, "__tls_get_addr"));
    loader_lo = c.ignore[1].lo;
    loader_hi = c.ignore[1].hi;
    pf_modules_find_eval_loop();   /* the walk ends there, where the Python frames (captured apart) take over */
    c.native_unwind = g_native_unwind;     /* the rule table's walk: no set-up, no lock */
    ignore_object_of(&c, 2, dlsym(RTLD_DEFAULT, "Py_GetVersion"));
    type_type = dlsym(RTLD_DEFAULT, "PyType_Type");

    char why[256];
    /* PYFLOW_WATCH_MECH=pages: page protections even where debug registers fire (tests, comparisons) */
    const char *mech = getenv(PF_ENV_WATCH_MECH);
    int forced_pages = mech && strcmp(mech, "pages") == 0 && !by_default;
    int rc = forced_pages ? -EOPNOTSUPP : pf_watch_init(&c, why, sizeof why);
    if (forced_pages)
        snprintf(why, sizeof why, "page protections asked for (PYFLOW_WATCH_MECH=pages)");
    if (rc && by_default)
        return rc;      /* not asked for: nothing to say */
    if (rc == -EOPNOTSUPP) {
        /* debug registers that never fire (some VMs): emulate them, by page protections (only accesses to a
         * watched word's page trap) unless PYFLOW_WATCH_MECH=steps asks for single steps */
        char first[256];
        memcpy(first, why, sizeof first);
        c.emulate_breakpoints = 1;
        c.emulate_pages = !(mech && strcmp(mech, "steps") == 0);
        c.emulate_step_limit = PF_EMULATED_STEP_LIMIT;
        if (!c.emulate_pages)
            c.rate_hz = PF_EMULATED_RATE_HZ;  /* page watches keep the hardware's rate: only the page traps */
        const char *budget = getenv(PF_ENV_WATCH_BUDGET);
        c.emulate_budget_pct = budget && *budget ? (unsigned)strtoul(budget, NULL, 10)
                               : c.modes == PF_WATCH_MODE_LOADS ? PF_WATCH_BUDGET_PCT_LOADS : PF_WATCH_BUDGET_PCT;
        rc = pf_watch_init(&c, why, sizeof why);
        if (rc == 0) {
            char how[64], note[192];
            const char *by = pf_watch_pages_on() ? "page protections" : "single steps";
            if (c.emulate_budget_pct > 0 && c.emulate_budget_pct < 100)
                snprintf(how, sizeof how, "kept to %u%% of CPU time (--watch-budget)", c.emulate_budget_pct);
            else
                snprintf(how, sizeof how, "with no cap on their CPU time");
            pf_log("watch: %s; emulating watchpoints by %s, %s", first, by, how);
            snprintf(note, sizeof note, "watch: watchpoints emulated by %s (debug registers do not fire "
                     "here), %s", by, how);
            note_later(note);
        }
    }
    if (rc) {
        say_off(why);
        return rc;
    }
    /* no libunwind here: the handlers walk with the rule table (g_native_unwind), so a run without --native
     * never sets libunwind up (its pipe, its pages) */
    pthread_key_create(&watch_key, thread_gone);
    watch_on = 1;
    __atomic_store_n(&pf_watch_glue_wanted, 1, __ATOMIC_RELAXED);
    return 0;
}

/* A note watch raised (*flag 1), said once, on the log and in the profile. */
static void say_once(pf_tls_t *t, int *flag, const char *why)
{
    if (PF_UNLIKELY(__atomic_load_n(flag, __ATOMIC_RELAXED) == 1) && __atomic_exchange_n(flag, 2, __ATOMIC_RELAXED) == 1) {
        pf_log("%s", why);
        pf_record_mark(t, PF_MARK_NOTE, 0, why);
    }
}

void pf_watch_glue_slow(pf_tls_t *t)
{
    if (PF_UNLIKELY(pf_watch_glue_note[0])) {
        pf_record_mark(t, PF_MARK_NOTE, 0, pf_watch_glue_note);
        pf_watch_glue_note[0] = '\0';
        if (!watch_on)
            __atomic_store_n(&pf_watch_glue_wanted, 0, __ATOMIC_RELAXED);
    }
    if (PF_LIKELY(!watch_on))
        return;
    say_once(t, &pf_watch_copies_blocked,
             "watch: the program blocks SIGTRAP (in a thread that blocks every signal), through which copy "
             "watches report: copies made there are not watched");
    say_once(t, &pf_watch_masked_seen,
             "watch: the program blocks SIGSEGV in a thread, through which page watches report: no page "
             "is watched while it does");
    if (PF_UNLIKELY(!t->watch_started)) {
        char why[256];
        t->watch_started = 1;
        int rc = pf_watch_thread_start(why, sizeof why);
        if (rc == 0)
            pthread_setspecific(watch_key, (void *)1);
        else if (rc == -EMFILE && !__atomic_exchange_n(&said_no_fds, 1, __ATOMIC_RELAXED)) {
            pf_log("watch: %s", why);     /* once: sampling goes on in the threads already watched */
            char note[320];
            snprintf(note, sizeof note, "watch: %s", why);
            pf_record_mark(t, PF_MARK_NOTE, 0, note);
        }
    }
    /* down before the look, so that a pair a handler queues meanwhile raises it again */
    pf_watch_attention = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (pf_watch_pending()) {
        pf_watch_sink_t sink = sink_of(t);
        pf_watch_drain(&sink);
    }
    if (copies_watched)
        pf_watch_copies_expire();
    if (pf_watch_needs_visit())
        pf_watch_attention = 1;     /* pairs the sink refused, copy watches still armed */
}

void pf_watch_glue_copy(uint64_t copy_id, const void *dst, const void *src, size_t n)
{
    if (watch_on) {
        copies_watched = 1;
        pf_watch_copy(copy_id, dst, src, n);
    }
}

void pf_watch_glue_fork_child(pf_tls_t *t)
{
    if (!watch_on)
        return;
    t->watch_started = 1;   /* pf_watch_fork_child restarts the forking thread itself */
    pf_watch_fork_child();
    pf_watch_attention = 1; /* the next visit looks at what the child's thread has */
}

void pf_watch_glue_stop(pf_tls_t *t)
{
    if (!watch_on)
        return;
    pf_watch_stop();
    pf_watch_sink_t sink = sink_of(t);
    pf_watch_drain(&sink);
}

/* At exit() the exiting thread's last pairs and counters are written: the stop at finalization runs only if
 * a sampled allocation happens then, and a short program's whole watch summary was lost without it. */
__attribute__((destructor)) static void drain_at_exit(void)
{
    pf_tls_t *t = &pf_tls;
    if (!watch_on || !t->watch_started || !t->ready)
        return;
    pf_guard_enter(t);
    pf_watch_glue_stop(t);
    pf_guard_leave(t);
}
