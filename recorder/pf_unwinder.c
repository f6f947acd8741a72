/* pf_unwinder.c - native stacks (--native): libunwind set up once, and a faster walk for the record path.
 *
 * libunwind's memory-validation pipe, kept off the program's descriptor numbers: libunwind (1.6 and later)
 * opens a pipe when it first unwinds, to test whether an address is readable by write(2)ing a byte from
 * it. pipe2 takes the two lowest free numbers, so under --native or --watch the program's first open()
 * returned 5 instead of 3, and a program that opens descriptors up to its limit got two fewer. pipe2 is
 * interposed (interpose/pf_hooks_io.c): a call made from inside libunwind has its descriptors moved above
 * the program's range (pf_fd_high); every other caller gets the plain system call. libunwind reopens the
 * pipe if it finds it closed (a program that closes every descriptor), which lands here again.
 *
 * The fast walk. unw_backtrace cost most of --exact --native's stack time: a lookup per frame in a
 * per-thread hash whose slots missed the cache, every frame of every stack, and each new thread learning
 * every address again. This walk steps the same way libunwind's fast trace does (the CFA from rsp or rbp,
 * the return address at CFA - 8, rbp where the frame saved it), with rules from one table every thread
 * shares (pf_cfi.c), and each thread remembers its last walks (a few, by starting stack pointer): each
 * frame's registers, and where its step read the return address and rbp. When a frame the walk reaches has
 * the same address and stack pointer as a remembered one (and the same rbp, where a later step computes
 * a CFA from it), and every word the remembered steps read from there on still holds what they read, the
 * walk from there would read the same words and reach the same frames: they are taken as remembered. A
 * loop allocating on one line checks a word or two per frame of its stack and walks nothing; a stack that
 * differs from a remembered one below some frame takes the frames up to there and walks from there.
 * Anything the walk does not follow (a signal frame, an expression rule, code without an FDE, an address
 * off the thread's stack) hands the whole stack to unw_backtrace; pf_record.c also compares stacks new
 * to the process (the first 4096, then one in 64) with libunwind's, and one disagreement sends every
 * later stack there, said once (PYFLOW_NATIVE_WALK=libunwind does so from the start).
 *
 * Those checks, and the set-up, step with unw_step (pf_unwinder_step.c), not unw_backtrace: unw_backtrace
 * gives each thread that calls it a trace cache of 256 KiB, every page of it written as it is made, which
 * then counts in the program's RSS; a run whose fast walk holds needs libunwind only for the checks, and
 * there a few microseconds more each (4096 stacks, then one in 64) cost less than 256 KiB a thread.
 */
#include <libunwind.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "pf_cfi.h"
#include "pf_eh_pages.h"
#include "pf_modules.h"
#include "pf_rec_int.h"
#include "pf_runtime.h"
#include "pf_unwinder.h"

/* Room for pyflow's own frames at the top of a native stack (dropped: they are the hook and slow path). */
#define PF_NATIVE_SKIP 8
#define WALK_FRAMES ((int)(PF_MAX_NATIVE_FRAMES + PF_NATIVE_SKIP + 8))
#define LOWEST_IP 0x4000    /* libunwind's fast trace stops at a return address below this */

#if defined(__x86_64__)
/* libunwind.so's own address space (what unw_backtrace walks in): libunwind.h names it so only under
 * UNW_LOCAL_ONLY, which would also rename unw_flush_cache to a symbol libunwind.so does not export. */
extern unw_addr_space_t _ULx86_64_local_addr_space;
#endif

static uint64_t unwinder_lo, unwinder_hi;   /* libunwind's code: the callers whose pipes are moved */
static int fast_off;                        /* every stack from libunwind */
static int code_unloaded;                   /* libunwind walks by unw_step (pf_unwinder_step.c) */
static pthread_key_t memos_key;             /* each thread's remembered walks, unmapped as it ends */
static int memos_key_made;
static void memos_free(void *p);

void pf_unwinder_start(void)
{
    if (unwinder_hi)
        return;
    memos_key_made = pthread_key_create(&memos_key, memos_free) == 0;
    const char *walk = getenv(PF_ENV_NATIVE_WALK);
    if (walk && !strcmp(walk, "libunwind"))
        fast_off = 1;
    pf_modules_find_eval_loop();
    if (!pf_modules_text_range((const void *)unw_backtrace, &unwinder_lo, &unwinder_hi))
        return;
    pf_unwinder_set_up();   /* libunwind's one-time set-up, which opens the pipe, happens now */
}

int pf_recorder_unwinder_caller(uint64_t ip)
{
    return ip >= unwinder_lo && ip < unwinder_hi;
}

static int walked;          /* a fast walk was made: rules are kept (pf_cfi.c) */

void pf_recorder_code_unloading(void)
{
    pf_eh_pages_unloading(1, 0);
}

void pf_recorder_code_unloaded(int removed)
{
    pf_eh_pages_unloading(0, removed);
    if (!removed)
        return;
    if (memos_key_made) {   /* libunwind was started (--native) */
#if defined(__x86_64__)
        /* libunwind keeps its own by address too (checked against its address space's generation): without
         * this it walked the next library with the unloaded one's rules */
        unw_flush_cache(_ULx86_64_local_addr_space, 0, 0);
#endif
        __atomic_store_n(&code_unloaded, 1, __ATOMIC_RELAXED);
    }
    if (!__atomic_load_n(&walked, __ATOMIC_RELAXED) || pf_cfi_forget())
        return;     /* no rule kept (no --native walk, no watch trap walked), or all of them dropped */
    /* watch's walks in its handlers give up too (the engine's frame-pointer walk): said only for --native */
    if (!__atomic_exchange_n(&fast_off, 1, __ATOMIC_RELAXED) && pf_cfg.native)
        pf_log("native stacks: libraries were unloaded too often to keep the fast walk's rules; libunwind walks every stack from now on");
}

void pf_unwinder_disagreed(void)
{
    if (!__atomic_exchange_n(&fast_off, 1, __ATOMIC_RELAXED))
        pf_log("native stacks: the fast walk and libunwind disagreed on one; libunwind walks every stack from now on");
}

int pf_unwinder_libunwind(uint64_t *out, int max)
{
    if (PF_UNLIKELY(__atomic_load_n(&code_unloaded, __ATOMIC_RELAXED)))
        return pf_unwinder_stepped(out, max);
    void *ips[PF_MAX_NATIVE_FRAMES + PF_NATIVE_SKIP];
    int got = unw_backtrace(ips, PF_MAX_NATIVE_FRAMES + PF_NATIVE_SKIP);
    int first = 0;
    while (first < got && pf_modules_is_self((uint64_t)(uintptr_t)ips[first]))
        first++;
    int n = got - first > max ? max : got - first;
    for (int i = 0; i < n; i++)
        out[i] = (uint64_t)(uintptr_t)ips[first + i];
    pf_unwinder_read_frames((const uint64_t *)(const void *)ips, got);
    return n > 0 ? n : 0;
}

/* One frame of a walk: the registers its step started from and the words the step read. */
typedef struct walk_frame {
    uint64_t ip;            /* frame 0: where the walk began; else a return address less one */
    uint64_t sp, bp;
    uint64_t ra_slot;       /* where the step read the return address; 0: no step (the walk ended here) */
    uint64_t bp_slot;       /* where it read rbp; 0: rbp kept */
    uint8_t lead;           /* every frame before this one was pyflow's own (or frame 0) */
    uint8_t emits;          /* this frame's ip is in the stack */
    uint8_t cfa_is_rbp;
    uint8_t bp_needed;      /* a step from here on computes a CFA from rbp before reading it again */
    uint32_t emits_after;   /* IPs this frame and those after it give */
} walk_frame_t;

/* A word a remembered step read, and what it held. */
typedef struct walk_word {
    uint64_t slot, held;
} walk_word_t;

/* A remembered walk: frames [first, WALK_FRAMES) of f, innermost first. */
typedef struct walk_memo {
    walk_frame_t f[WALK_FRAMES];
    int kept;               /* frames kept: first is WALK_FRAMES - kept (memo_first); 0: none */
    int truncated;          /* it stopped at max IPs: the stack goes on past its last frame */
    uint64_t last_ra;       /* the return address below LOWEST_IP its last step read, if it ended so */
    /* The words memo_changed_at compares, in frame order, packed (memo_words): a walk that holds reads
     * these 16 bytes a word, not a 48-byte frame and the next one's address. word_from[i]: frame i's
     * first; frame_of[k]: word k's frame. */
    walk_word_t words[2 * WALK_FRAMES];
    uint8_t word_from[WALK_FRAMES + 1];
    uint8_t frame_of[2 * WALK_FRAMES];
    /* The IPs its frames give, packed likewise: a walk that holds from frame i copies them from
     * ips[ip_from[i]] on. */
    uint8_t ip_from[WALK_FRAMES + 1];
    uint64_t ips[WALK_FRAMES];
    /* site_at[k]: the index in ips of the first native site at or after k (pf_modules_sites), so that a
     * walk that holds knows where its stack is cut without looking at its IPs again */
    uint8_t site_at[WALK_FRAMES + 1];
} walk_memo_t;

/* Where M's frames begin; WALK_FRAMES: no walk kept. Stored as a count so that a way never written reads
 * as none: a thread's memos are fresh zero pages, and none of them is touched before it keeps a walk. */
static inline int memo_first(const walk_memo_t *M)
{
    return WALK_FRAMES - M->kept;
}

static inline void memo_set_first(walk_memo_t *M, int first)
{
    M->kept = WALK_FRAMES - first;
}

/* A thread's last walks, four for each of eight sets of starting stack pointers: allocations from
 * different C functions start at different depths, and a loop makes a handful of them in turn. Mapped on
 * a thread's first walk (230 KiB of address space, two pages touched for each walk kept: not in its static
 * TLS, which a small thread stack must also hold) and unmapped as it ends. */
#define MEMO_SETS 8
#define MEMO_WAYS 4

/* What a walk checks of each way of its set before the way's words, side by side (one or two cache lines
 * a set, not a line or two of each way's 7 KiB): the way's first frame's registers, and the word the step
 * to its first IP of the program's read (below it, pyflow's own frames: a loop's allocations from a few
 * C call sites in turn start alike and differ there first). sp 0: no walk kept. */
typedef struct walk_tag {
    uint64_t sp, ip;
    uint64_t bp;            /* checked where the way's first frame has bp_needed */
    uint64_t key_slot;      /* 0: no such word (no IP of the program's in the walk) */
    uint64_t key_held;
    uint8_t bp_needed;
} walk_tag_t;

typedef struct walk_memos {
    walk_memo_t way[MEMO_SETS][MEMO_WAYS];
    walk_tag_t tag[MEMO_SETS][MEMO_WAYS];
    uint8_t victim[MEMO_SETS];  /* the way the next walk that is none of the set's replaces */
} walk_memos_t;

#define MEMOS_GONE ((walk_memos_t *)1)
static __thread walk_memos_t *memos;    /* NULL: none yet; MEMOS_GONE: the thread is ending */
static void memos_free(void *p)
{
    memos = MEMOS_GONE;
    munmap(p, sizeof(walk_memos_t));
}

static walk_memos_t *thread_memos(void)
{
    if (PF_LIKELY(memos))
        return memos == MEMOS_GONE ? NULL : memos;
    void *p = memos_key_made ? mmap(NULL, sizeof(walk_memos_t), PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
    if (p == MAP_FAILED || pthread_setspecific(memos_key, p) != 0) {
        if (p != MAP_FAILED)
            munmap(p, sizeof(walk_memos_t));
        memos = MEMOS_GONE;
        return NULL;
    }
    memos = p;    /* every way's kept is 0 (none): its pages stay untouched until a walk is kept there */
    __atomic_store_n(&walked, 1, __ATOMIC_RELAXED);
    return memos;
}


/* M's words and IPs (above) from its frames [first, WALK_FRAMES), once they are final: each step's
 * return address, and the rbp it read where a later step computes a CFA from it, up to the first frame
 * with no step (the walk's last); the IP of each frame that gives one; where its native sites are. */
static void memo_words(pf_tls_t *t, walk_memo_t *M)
{
    int n = 0, ended = 0, n_ips = 0;
    for (int i = memo_first(M); i < WALK_FRAMES; i++) {
        M->word_from[i] = (uint8_t)n;
        M->ip_from[i] = (uint8_t)n_ips;
        const walk_frame_t *f = &M->f[i];
        if (f->emits)
            M->ips[n_ips++] = f->ip + 1;
        ended = ended || !f->ra_slot;
        if (ended)
            continue;
        M->frame_of[n] = (uint8_t)i;
        M->words[n++] = (walk_word_t){f->ra_slot, i + 1 < WALK_FRAMES ? M->f[i + 1].ip + 1 : M->last_ra};
        if (f->bp_slot && i + 1 < WALK_FRAMES && M->f[i + 1].bp_needed) {
            M->frame_of[n] = (uint8_t)i;
            M->words[n++] = (walk_word_t){f->bp_slot, M->f[i + 1].bp};
        }
    }
    M->word_from[WALK_FRAMES] = (uint8_t)n;
    M->ip_from[WALK_FRAMES] = (uint8_t)n_ips;
    pf_modules_sites(t, M->ips, n_ips, M->site_at);
}

/* How many of the n IPs a walk gave, M's from its ips[from] on, to keep: pf_modules_native_cut's count. */
static int memo_cut(const walk_memo_t *M, int from, int n)
{
    int k = M->site_at[from];
    return k != PF_NO_SITE && k - from < n ? k - from + 1 : 0;
}

/* -1 when every word M's steps read from frame j on still holds what they read; else the first frame
 * whose step would now read another word. lo: the walk's stack pointer (nothing below it is read). */
static int memo_changed_at(const walk_memo_t *M, int j, uint64_t lo)
{
    for (int k = M->word_from[j], end = M->word_from[WALK_FRAMES]; k < end; k++) {
        const walk_word_t *w = &M->words[k];
        if (w->slot < lo || *(const uint64_t *)(uintptr_t)w->slot != w->held)
            return M->frame_of[k];
    }
    return -1;
}

/* M's tag (above), from its frames as they are now. */
static void memo_tag(walk_memos_t *all, const walk_memo_t *M)
{
    size_t at = (size_t)(M - &all->way[0][0]);
    walk_tag_t *g = &all->tag[at / MEMO_WAYS][at % MEMO_WAYS];
    *g = (walk_tag_t){0};
    if (memo_first(M) == WALK_FRAMES)
        return;
    const walk_frame_t *f = &M->f[memo_first(M)];
    g->sp = f->sp;
    g->ip = f->ip;
    g->bp = f->bp;
    g->bp_needed = f->bp_needed;
    for (int i = memo_first(M); i + 1 < WALK_FRAMES && M->f[i].ra_slot; i++) {
        if (M->f[i + 1].emits) {
            g->key_slot = M->f[i].ra_slot;
            g->key_held = M->f[i + 1].ip + 1;
            break;
        }
    }
}

/* 1 when M's walk began with the frame a walk from (sp, ip, bp) begins with (its tag says the same: the
 * tag only spares the walks of other ways a look at their memos, and the memo has the last word). */
static inline int memo_starts_at(const walk_memo_t *M, uint64_t sp, uint64_t ip, uint64_t bp)
{
    const walk_frame_t *f0 = &M->f[memo_first(M)];
    return memo_first(M) != WALK_FRAMES && f0->sp == sp && f0->ip == ip && (!f0->bp_needed || f0->bp == bp);
}

/* 1 when a walk from (sp, ip, bp) may be g's: the same first frame, and the word g's walk read its first
 * IP of the program's from still holds it (a way whose every word holds passes). lo: the walk's sp. */
static inline int tag_may_hold(const walk_tag_t *g, uint64_t sp, uint64_t ip, uint64_t bp, uint64_t lo)
{
    if (g->sp != sp || g->ip != ip || (g->bp_needed && g->bp != bp))
        return 0;
    return !g->key_slot || (g->key_slot >= lo && *(const uint64_t *)(uintptr_t)g->key_slot == g->key_held);
}

/* The n IPs at src into dst: constant-size copies the compiler inlines (a call to memcpy for the dozen IPs
 * of a walk that holds was a tenth of the walk's time). */
static inline void copy_ips(uint64_t *dst, const uint64_t *src, int n)
{
    int i = 0;
    for (; i + 4 <= n; i += 4)
        __builtin_memcpy(dst + i, src + i, 32);
    for (; i < n; i++)
        dst[i] = src[i];
}

/* bp_needed and emits_after of frames [from, to), from the frame at `to` (none when to == WALK_FRAMES). */
static void finish_frames(walk_frame_t *f, int from, int to)
{
    int needed = to < WALK_FRAMES ? f[to].bp_needed : 0;
    uint32_t emits = to < WALK_FRAMES ? f[to].emits_after : 0;
    for (int i = to - 1; i >= from; i--) {
        needed = f[i].ra_slot && (f[i].cfa_is_rbp || (!f[i].bp_slot && needed));
        f[i].bp_needed = (uint8_t)needed;
        emits += f[i].emits;
        f[i].emits_after = emits;
    }
}

/* The walk itself; -1 where libunwind must do it. *cut: how many of the IPs to keep (pf_modules_native_cut's
 * count), from the memo the walk is remembered in. */
__attribute__((noinline)) static int fast_walk(pf_tls_t *t, uint64_t *out, int max, int *cut)
{
#if !defined(__x86_64__)
    (void)t, (void)out, (void)max;
    return -1;      /* the rules and registers below are x86-64's: libunwind walks elsewhere */
#else
    uint64_t ip, sp, bp;
    __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(ip), "=r"(sp), "=r"(bp));
    const uint64_t lo = sp, hi = t->stack_high;
    if (!hi || sp < t->stack_low || sp >= hi)
        return -1;  /* a signal stack, or a thread whose stack is not known */
    const int stop_at_eval = !pf_cfg.whole_stacks;
    walk_memos_t *all = thread_memos();
    if (!all)
        return -1;
    if (PF_UNLIKELY(pf_cfi_renewed())) { /* code was unloaded: remembered frames may name its addresses */
        for (int i = 0; i < MEMO_SETS; i++)
            for (int w = 0; w < MEMO_WAYS; w++)
                all->way[i][w].kept = 0;
        memset(all->tag, 0, sizeof all->tag);
    }
    /* the way whose walk from this very frame still holds (the first such), or holds longest */
    size_t set = (size_t)((sp * 0x9E3779B97F4A7C15ull) >> 61);
    const walk_tag_t *tags = all->tag[set];
    walk_memo_t *M = NULL;
    int held = -2;     /* M's memo_changed_at from its first frame; -2: not computed */
    for (int w = 0; !M && w < MEMO_WAYS; w++) {
        /* a way that holds passes its tag: only those are checked, first frame and words */
        walk_memo_t *C = &all->way[set][w];
        if (tag_may_hold(&tags[w], sp, ip, bp, lo) && memo_starts_at(C, sp, ip, bp) &&
            memo_changed_at(C, memo_first(C), lo) < 0) {
            M = C;
            held = -1;
        }
    }
    /* none holds: the one that holds longest (the first such), from which the walk takes what it can */
    if (!M) {
        for (int w = 0; w < MEMO_WAYS; w++) {
            walk_memo_t *C = &all->way[set][w];
            if (!memo_starts_at(C, sp, ip, bp))
                continue;
            int c = memo_changed_at(C, memo_first(C), lo);
            if (!M || c > held) {
                M = C;
                held = c;
            }
        }
    }
    /* where this walk is remembered: M itself, unless M's stack is another one that starts alike */
    walk_memo_t *dst = M;
    if (!M || held >= 0) {
        uint8_t *v = &all->victim[set];
        if (M && &all->way[set][*v] == M)
            *v = (uint8_t)((*v + 1) % MEMO_WAYS);
        dst = &all->way[set][*v];
        *v = (uint8_t)((*v + 1) % MEMO_WAYS);
        if (!M)
            M = dst;
    }
    walk_frame_t fresh[WALK_FRAMES];
    int nf = 0, n = 0, lead = 1, m = memo_first(M), tries = 4, changed = -1, ended_low = 0;
    uint64_t last_ra = 0;
    for (;;) {
        /* a frame the remembered walk also reached, with the same registers: maybe its frames from here */
        while (m < WALK_FRAMES && M->f[m].sp < sp)
            m++;
        if (tries && m > changed && m < WALK_FRAMES && M->f[m].sp == sp && M->f[m].ip == ip &&
            M->f[m].lead == lead && (!M->f[m].bp_needed || M->f[m].bp == bp)) {
            tries--;
            if ((M->truncated && n + (int)M->f[m].emits_after < max) || nf > m) {
                tries = 0;  /* its frames end too soon for this stack, or this one has more inner frames */
            } else if ((changed = (m == memo_first(M) && held != -2) ? held : memo_changed_at(M, m, lo)) < 0) {
                int take = M->ip_from[WALK_FRAMES] - M->ip_from[m];
                take = take < max - n ? take : max - n;
                copy_ips(out + n, &M->ips[M->ip_from[m]], take);
                n += take;
                if (nf) {
                    if (dst != M) {
                        memcpy(&dst->f[m], &M->f[m], (size_t)(WALK_FRAMES - m) * sizeof *fresh);
                        dst->truncated = M->truncated;
                        dst->last_ra = M->last_ra;
                    }
                    memcpy(&dst->f[m - nf], fresh, (size_t)nf * sizeof *fresh);
                    finish_frames(dst->f, m - nf, m);
                    memo_set_first(dst, m - nf);
                    memo_words(t, dst);
                    memo_tag(all, dst);
                    *cut = memo_cut(dst, 0, n);    /* its IPs are the walk's, fresh ones first */
                } else {
                    *cut = memo_cut(M, M->ip_from[m], n);
                    if (memo_first(M) != m) {
                        memo_set_first(M, m);
                        memo_tag(all, M);
                    }
                }
                return n;
            } else {
                /* frames m .. changed - 1 step as they did (the words they read hold): take them and
                 * walk on from frame `changed`, whose step now reads something else */
                for (int i = m; i < changed && n < max && nf < WALK_FRAMES; i++) {
                    walk_frame_t *f = &fresh[nf++];
                    *f = M->f[i];
                    f->bp = bp;
                    if (f->emits)
                        out[n++] = f->ip + 1;
                    if (f->bp_slot) {
                        if (f->bp_slot < lo)
                            return -1;
                        bp = *(const uint64_t *)(uintptr_t)f->bp_slot;
                    }
                }
                if (n == max)
                    break;
                ip = M->f[changed].ip;
                sp = M->f[changed].sp;
                lead = M->f[changed].lead;
                m = changed;
            }
        }
        if (nf == WALK_FRAMES)
            return -1;
        walk_frame_t *f = &fresh[nf];
        *f = (walk_frame_t){.ip = ip, .sp = sp, .bp = bp, .lead = (uint8_t)lead};
        if (nf > 0) {
            lead = lead && pf_modules_is_self(ip);
            f->emits = !lead;
            if (f->emits)
                out[n++] = ip + 1;  /* unw_backtrace's IPs are the return addresses themselves */
        }
        nf++;
        if (n == max || (stop_at_eval && pf_modules_in_eval_loop(ip + 1)))
            break;  /* no IP past the interpreter's loop is kept (pf_modules_native_cut): no step from it */
        pf_cfi_rule_t r = pf_cfi_rule(ip);
        if (r.kind == PF_CFI_LAST)
            break;
        if (r.kind != PF_CFI_STANDARD)
            return -1;
        uint64_t cfa = (r.cfa_is_rbp ? bp : sp) + (uint64_t)(int64_t)r.cfa_off;
        if (cfa - 8 < lo || cfa > hi)
            return -1;
        f->ra_slot = cfa - 8;
        f->cfa_is_rbp = r.cfa_is_rbp;
        uint64_t ra = *(const uint64_t *)(uintptr_t)(cfa - 8);
        if (r.rbp_off != PF_CFI_RBP_KEPT) {
            uint64_t at = cfa + (uint64_t)(int64_t)r.rbp_off;
            if (at < lo || at + 8 > hi)
                return -1;
            f->bp_slot = at;
            bp = *(const uint64_t *)(uintptr_t)at;
        }
        sp = cfa;
        if (ra < LOWEST_IP) {
            ended_low = 1;
            last_ra = ra;
            break;
        }
        ip = ra - 1;
    }
    /* a whole walk: it becomes the memo, at the end of the array */
    if (!ended_low)
        fresh[nf - 1].ra_slot = 0;     /* no step was taken from the last frame */
    int first = WALK_FRAMES - nf;
    memcpy(&dst->f[first], fresh, (size_t)nf * sizeof *fresh);
    finish_frames(dst->f, first, WALK_FRAMES);
    memo_set_first(dst, first);
    dst->truncated = n == max;
    dst->last_ra = last_ra;
    memo_words(t, dst);
    memo_tag(all, dst);
    *cut = memo_cut(dst, 0, n);
    return n;
#endif
}

int pf_unwinder_signal_walk(const pf_tls_t *t, const void *uc, uint64_t *ips, int max, uint64_t stop_lo,
                            uint64_t stop_hi)
{
#if !defined(__x86_64__)
    (void)t, (void)uc, (void)ips, (void)max, (void)stop_lo, (void)stop_hi;
    return -1;
#else
    const greg_t *g = ((const ucontext_t *)uc)->uc_mcontext.gregs;
    uint64_t ip = (uint64_t)g[REG_RIP], sp = (uint64_t)g[REG_RSP], bp = (uint64_t)g[REG_RBP];
    const uint64_t lo = sp, hi = t->stack_high;
    if (!hi || sp < t->stack_low || sp >= hi || __atomic_load_n(&fast_off, __ATOMIC_RELAXED))
        return -1;  /* another stack (a signal stack), or rules that may be stale after many unloads */
    if (!__atomic_load_n(&walked, __ATOMIC_RELAXED))
        __atomic_store_n(&walked, 1, __ATOMIC_RELAXED);    /* rules are kept: an unload must drop them */
    uint64_t at = ip;   /* the interrupted instruction's own row; a caller's is its call's, ra - 1 */
    int n = 0;
    while (n < max) {
        ips[n++] = ip;
        if (ip >= stop_lo && ip < stop_hi)
            break;
        pf_cfi_rule_t r = pf_cfi_rule_in_signal(at);
        if (r.kind != PF_CFI_STANDARD)
            break;  /* the outermost frame, or a rule the walk does not follow: the frames so far */
        uint64_t cfa = (r.cfa_is_rbp ? bp : sp) + (uint64_t)(int64_t)r.cfa_off;
        if (cfa - 8 < lo || cfa > hi)
            break;
        uint64_t ra = *(const uint64_t *)(uintptr_t)(cfa - 8);
        if (r.rbp_off != PF_CFI_RBP_KEPT) {
            uint64_t slot = cfa + (uint64_t)(int64_t)r.rbp_off;
            if (slot < lo || slot + 8 > hi)
                break;
            bp = *(const uint64_t *)(uintptr_t)slot;
        }
        sp = cfa;
        if (ra < LOWEST_IP)
            break;
        ip = ra;
        at = ra - 1;
    }
    return n;
#endif
}

void pf_unwinder_read_frames(const uint64_t *ips, int n)
{
    const uint64_t self = (uint64_t)(uintptr_t)pf_unwinder_read_frames;    /* its own frames were stepped too */
    pf_eh_pages_read(&self, 1);
    pf_eh_pages_read(ips, n);
    pf_eh_pages_read_done();
}

int pf_unwinder_capture(pf_tls_t *t, uint64_t *out, int max, int *fast, int *cut)
{
    if (!__atomic_load_n(&fast_off, __ATOMIC_RELAXED)) {
        int n = fast_walk(t, out, max, cut);
        if (n >= 0) {
            *fast = 1;
            return n;
        }
    }
    *fast = 0;
    int n = pf_unwinder_libunwind(out, max);
    *cut = pf_modules_native_cut(t, out, n);
    return n;
}
