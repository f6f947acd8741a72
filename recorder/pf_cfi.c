/* pf_cfi.c - the step rule at an instruction address, from the .eh_frame FDE that covers it.
 *
 * libunwind's unw_backtrace keeps such rules in a per-thread hash of 16K slots, one cache line apart: each
 * frame of each stack was a dependent load that missed (most of --exact --native's unwinding time), and
 * every new thread learned every address again. Here one table serves all threads and pf_unwind.c walks
 * with it. Only what GCC and clang emit for ordinary x86-64 code is followed (the CFA from rsp or rbp plus
 * an offset, the return address at CFA - 8, rbp saved at an offset or kept); anything else (expressions,
 * signal frames, no FDE) is PF_CFI_UNKNOWN and the caller asks libunwind instead.
 *
 * The table is filled lock-free: a slot is claimed by a compare-and-swap of its key from 0 to 1, its rule
 * written, then its key published with release order. A reader that meets a busy or foreign slot reads
 * the FDE itself (a miss, not a wrong answer).
 *
 * The table starts small and doubles when half full, up to CFI_MAX_SLOTS: its slots are hashed over the
 * whole table, so every page of a table of 8192 slots (128 KiB) was resident for a program that steps
 * through a few hundred return addresses (all of --exact --native's lead over its 1.2x peak RSS goal on
 * bench/workloads/indexing.py). The thread whose claim fills it to half copies the published rules into
 * one twice as large and swaps it in; claims made in the old one meanwhile are read again later.
 *
 * Rules are kept by address, and a library unloaded (dlclose) may be followed by another at the same
 * addresses: pf_cfi_forget (from the dlclose hook, once an object is really gone) puts an empty shared
 * table in place and bumps a generation, and each thread empties its own page when its next walk sees the
 * new generation (pf_cfi_renewed: one load per walk, none per frame). A table replaced, by growth or by
 * forgetting, stays mapped (a reader may still be probing it) with its pages given back: a reader there
 * then finds zeros, an empty slot or a rule of kind PF_CFI_UNKNOWN (read in one load), and at worst asks
 * libunwind; a claim it makes there writes one page back in, which stays (a page per walk under way at a
 * swap, at most). Past CFI_RENEWALS the fast walk is given up.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "pf_cfi.h"
#include "pf_eh_pages.h"
#include "pf_recorder.h"
#include "pf_sys.h"

/* glibc's lock-free lookup of the loaded object holding an address, with its .eh_frame_hdr (2.35 and later). */
#include <dlfcn.h>

#define CFI_FIRST_SLOTS 256u        /* powers of two; a program's hot return addresses are a few hundred */
#define CFI_MAX_SLOTS 8192u
#define CFI_PROBES 8
#define CFI_STATES 8                /* DW_CFA_remember_state depth */

typedef struct cfi_slot {
    uint64_t key;                   /* ip, 0 empty, 1 being written */
    pf_cfi_rule_t rule;             /* read in one 8-byte load (rule_of): never half a rule */
} cfi_slot_t;
_Static_assert(sizeof(pf_cfi_rule_t) == sizeof(uint64_t), "rule_of reads a rule in one load");

typedef struct cfi_table {
    uint64_t mask;                  /* slots - 1 */
    uint64_t used;                  /* slots claimed */
    cfi_slot_t slot[];
} cfi_table_t;

#define CFI_RENEWALS 64             /* empty tables made after unloads */

static cfi_table_t *table;          /* the one in use (release): made at the first lookup, replaced by
                                       grow_table and pf_cfi_forget */
static uint32_t growing;            /* 1 while a thread grows the table */
static uint32_t generation;         /* pf_cfi_forget calls so far */
static uint32_t renewals;

/* ---- reading the FDE ---- */

typedef struct cursor {
    const uint8_t *p, *end;
    int bad;
} cursor_t;

static uint64_t read_uleb(cursor_t *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; c->p < c->end; shift += 7) {
        uint8_t b = *c->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    c->bad = 1;
    return 0;
}

static int64_t read_sleb(cursor_t *c)
{
    int64_t v = 0;
    unsigned shift = 0;
    while (c->p < c->end) {
        uint8_t b = *c->p++;
        if (shift < 64)
            v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
        shift += 7;
        if (!(b & 0x80)) {
            if (shift < 64 && (b & 0x40))
                v |= -((int64_t)1 << shift);
            return v;
        }
    }
    c->bad = 1;
    return 0;
}

static uint64_t read_fixed(cursor_t *c, unsigned n)
{
    if ((size_t)(c->end - c->p) < n) {
        c->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)c->p[i] << (8 * i);
    c->p += n;
    return v;
}

/* An encoded value (DW_EH_PE_*) as stored, without what it is relative to (the high nibble): its size and
 * sign are all a pc_range or a count needs. */
static uint64_t read_encoded(cursor_t *c, uint8_t enc)
{
    switch (enc & 0x0f) {
    case 0x00: case 0x04: case 0x0c: return read_fixed(c, 8);
    case 0x02: return read_fixed(c, 2);
    case 0x0a: return (uint64_t)(int64_t)(int16_t)read_fixed(c, 2);
    case 0x03: return read_fixed(c, 4);
    case 0x0b: return (uint64_t)(int64_t)(int32_t)read_fixed(c, 4);
    case 0x01: return read_uleb(c);
    case 0x09: return (uint64_t)read_sleb(c);
    default: c->bad = 1; return 0;
    }
}

/* Steps over an encoded pointer: the FDE's start comes from the search table (find_fde). */
static void skip_encoded(cursor_t *c, uint8_t enc)
{
    if (enc != 0xff)
        read_encoded(c, enc);
}

#define DW_EH_PE_DATAREL_SDATA4 0x3b    /* the search table's entries: what every linker writes */

/* The FDE of the function around ip, and that function's start (*func): a binary search of the search table
 * in the .eh_frame_hdr of ip's object, which the loader finds without a lock (_dl_find_object), as libgcc's
 * _Unwind_Find_FDE does. Done here because libgcc_s, loaded for that one function, was 92 KiB of the
 * program's RSS in every mode (its constructor and its lookup each fault in 64 KiB of its code). NULL when
 * the object has no table (or one not in the usual encoding), or ip lies past the last function before it;
 * the caller checks that ip is inside that function. */
static const uint8_t *find_fde(uint64_t ip, uint64_t *func)
{
    struct dl_find_object obj;
    if (_dl_find_object((void *)(uintptr_t)ip, &obj) != 0 || !obj.dlfo_eh_frame)
        return NULL;
    const uint8_t *hdr = obj.dlfo_eh_frame;
    if (hdr[0] != 1 || hdr[3] != DW_EH_PE_DATAREL_SDATA4 || (hdr[2] & 0x70) != 0 || hdr[2] == 0xff)
        return NULL;
    cursor_t c = {hdr + 4, hdr + 4 + 16, 0};
    skip_encoded(&c, hdr[1]);                   /* eh_frame_ptr */
    uint64_t count = read_encoded(&c, hdr[2]);
    if (c.bad || !count || count > (1ull << 32))
        return NULL;
    const int32_t *table = (const int32_t *)(const void *)c.p;   /* (start, FDE) pairs, by start */
    uint64_t lo = 0, hi = count;                /* the last entry whose start is at or below ip */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if ((uint64_t)(uintptr_t)hdr + (uint64_t)(int64_t)table[2 * mid] <= ip)
            lo = mid;
        else
            hi = mid;
    }
    uint64_t start = (uint64_t)(uintptr_t)hdr + (uint64_t)(int64_t)table[2 * lo];
    if (start > ip)
        return NULL;
    *func = start;
    return hdr + table[2 * lo + 1];
}

/* A length-prefixed entry (CIE or FDE) at p: its contents after the length, in c. */
static void entry_at(const uint8_t *p, cursor_t *c)
{
    cursor_t l = {p, p + 12, 0};
    uint64_t len = read_fixed(&l, 4);
    if (len == 0xffffffffu)
        len = read_fixed(&l, 8);
    c->p = l.p;
    c->end = l.p + len;
    c->bad = l.bad || len == 0;
}

/* ---- the rows of the CFI program ---- */

enum { R_SAME = 0, R_OFFSET = 1, R_UNDEF = 2, R_OTHER = 3 };

typedef struct cfi_row {
    uint64_t cfa_reg;
    int64_t cfa_off;
    uint8_t cfa_other;              /* an expression */
    uint8_t rbp, ra, rsp;           /* R_* */
    int64_t rbp_off, ra_off;
} cfi_row_t;

typedef struct cie_info {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc;
    uint8_t has_z, signal;
    cursor_t init;                  /* the initial instructions */
} cie_info_t;

#define DW_RBP 6
#define DW_RSP 7

static void set_rule(cfi_row_t *r, const cie_info_t *cie, uint64_t reg, uint8_t kind, int64_t off)
{
    if (reg == DW_RBP) {
        r->rbp = kind;
        r->rbp_off = off;
    } else if (reg == cie->ra_reg) {
        r->ra = kind;
        r->ra_off = off;
    } else if (reg == DW_RSP) {
        r->rsp = kind;
    }
}

static void restore_rule(cfi_row_t *r, const cfi_row_t *init, const cie_info_t *cie, uint64_t reg)
{
    if (reg == DW_RBP)
        set_rule(r, cie, reg, init->rbp, init->rbp_off);
    else if (reg == cie->ra_reg)
        set_rule(r, cie, reg, init->ra, init->ra_off);
    else if (reg == DW_RSP)
        r->rsp = init->rsp;
}

/* Runs the instructions in c over row r up to the row that covers pc (loc: the address the program is at).
 * init: the CIE's row, for DW_CFA_restore. Returns 0, or -1 for an instruction not followed here. */
static int run_program(cursor_t *c, const cie_info_t *cie, cfi_row_t *r, const cfi_row_t *init, uint64_t *loc,
                       uint64_t pc)
{
    cfi_row_t saved[CFI_STATES];
    int depth = 0;
    while (c->p < c->end && !c->bad) {
        uint8_t op = *c->p++;
        uint64_t reg, delta = UINT64_MAX;
        switch (op >> 6) {
        case 1: delta = op & 0x3f; break;
        case 2: reg = op & 0x3f; set_rule(r, cie, reg, R_OFFSET, (int64_t)read_uleb(c) * cie->data_align); continue;
        case 3: restore_rule(r, init, cie, op & 0x3f); continue;
        default: break;
        }
        if (delta == UINT64_MAX) {
            switch (op) {
            case 0x00: continue;                                            /* nop */
            case 0x02: delta = read_fixed(c, 1); break;                     /* advance_loc1 */
            case 0x03: delta = read_fixed(c, 2); break;
            case 0x04: delta = read_fixed(c, 4); break;
            case 0x05: reg = read_uleb(c); set_rule(r, cie, reg, R_OFFSET, (int64_t)read_uleb(c) * cie->data_align); continue;
            case 0x06: restore_rule(r, init, cie, read_uleb(c)); continue;
            case 0x07: set_rule(r, cie, read_uleb(c), R_UNDEF, 0); continue;
            case 0x08: set_rule(r, cie, read_uleb(c), R_SAME, 0); continue;
            case 0x09: reg = read_uleb(c); read_uleb(c); set_rule(r, cie, reg, R_OTHER, 0); continue;
            case 0x0a:                                                      /* remember_state */
                if (depth == CFI_STATES)
                    return -1;
                saved[depth++] = *r;
                continue;
            case 0x0b:                                                      /* restore_state */
                if (depth == 0)
                    return -1;
                *r = saved[--depth];
                continue;
            case 0x0c: r->cfa_reg = read_uleb(c); r->cfa_off = (int64_t)read_uleb(c); r->cfa_other = 0; continue;
            case 0x0d: r->cfa_reg = read_uleb(c); r->cfa_other = 0; continue;
            case 0x0e: r->cfa_off = (int64_t)read_uleb(c); continue;
            case 0x0f: c->p += read_uleb(c); r->cfa_other = 1; continue;   /* def_cfa_expression */
            case 0x10: case 0x16:                                           /* (val_)expression */
                reg = read_uleb(c);
                c->p += read_uleb(c);
                set_rule(r, cie, reg, R_OTHER, 0);
                continue;
            case 0x11: reg = read_uleb(c); set_rule(r, cie, reg, R_OFFSET, read_sleb(c) * cie->data_align); continue;
            case 0x12: r->cfa_reg = read_uleb(c); r->cfa_off = read_sleb(c) * cie->data_align; r->cfa_other = 0; continue;
            case 0x13: r->cfa_off = read_sleb(c) * cie->data_align; continue;
            case 0x14: reg = read_uleb(c); read_uleb(c); set_rule(r, cie, reg, R_OTHER, 0); continue;
            case 0x15: reg = read_uleb(c); read_sleb(c); set_rule(r, cie, reg, R_OTHER, 0); continue;
            case 0x2e: read_uleb(c); continue;                              /* GNU_args_size */
            case 0x2f: reg = read_uleb(c); set_rule(r, cie, reg, R_OFFSET, -(int64_t)read_uleb(c) * cie->data_align); continue;
            default: return -1;                                             /* set_loc and the rest */
            }
        }
        if (*loc + delta * cie->code_align > pc)
            return 0;   /* the row in effect at pc is the one built so far */
        *loc += delta * cie->code_align;
    }
    return c->bad ? -1 : 0;
}

static int read_cie(const uint8_t *p, cie_info_t *cie)
{
    cursor_t c;
    entry_at(p, &c);
    if (c.bad || read_fixed(&c, 4) != 0)
        return -1;          /* not a CIE */
    uint8_t version = (uint8_t)read_fixed(&c, 1);
    const char *aug = (const char *)c.p;
    while (c.p < c.end && *c.p)
        c.p++;
    c.p++;
    if (version == 4)
        c.p += 2;           /* address and segment sizes */
    cie->code_align = read_uleb(&c);
    cie->data_align = read_sleb(&c);
    cie->ra_reg = version == 1 ? read_fixed(&c, 1) : read_uleb(&c);
    cie->fde_enc = 0;
    cie->has_z = aug[0] == 'z';
    cie->signal = 0;
    if (cie->has_z) {
        uint64_t len = read_uleb(&c);
        cursor_t a = {c.p, c.p + len, c.bad};
        for (const char *s = aug + 1; *s && !a.bad; s++) {
            if (*s == 'R')
                cie->fde_enc = (uint8_t)read_fixed(&a, 1);
            else if (*s == 'P') {
                uint8_t enc = (uint8_t)read_fixed(&a, 1);
                skip_encoded(&a, enc & 0x7f);
            } else if (*s == 'L')
                read_fixed(&a, 1);
            else if (*s == 'S')
                cie->signal = 1;
            else if (*s != 'B')
                return -1;
        }
        c.p += len;
    } else if (aug[0]) {
        return -1;
    }
    cie->init = c;
    return c.bad ? -1 : 0;
}

static pf_cfi_rule_t rule_from_fde(uint64_t ip)
{
    pf_cfi_rule_t out = {0, 0, 0, PF_CFI_UNKNOWN};
    uint64_t func;
    pf_eh_pages_read(&ip, 1);   /* the search and the FDE below fault its pages in */
    const uint8_t *fde = find_fde(ip, &func);
    if (!fde)
        return out;
    cursor_t c;
    entry_at(fde, &c);
    if (c.bad)
        return out;
    const uint8_t *id_at = c.p;
    uint32_t cie_off = (uint32_t)read_fixed(&c, 4);
    cie_info_t cie;
    if (!cie_off || read_cie(id_at - cie_off, &cie) != 0 || cie.signal)
        return out;
    skip_encoded(&c, cie.fde_enc);          /* pc_begin: func */
    uint64_t range = read_encoded(&c, cie.fde_enc & 0x0f);
    if (cie.has_z)
        c.p += read_uleb(&c);
    if (c.bad || ip - func >= range)
        return out;     /* ip lies between functions: the nearest one below does not cover it */
    cfi_row_t row = {.cfa_reg = DW_RSP, .cfa_off = 8, .rbp = R_SAME, .ra = R_SAME, .rsp = R_SAME};
    uint64_t loc = func;
    cursor_t init = cie.init;
    if (run_program(&init, &cie, &row, &row, &loc, UINT64_MAX) != 0)
        return out;
    cfi_row_t init_row = row;
    loc = func;
    if (run_program(&c, &cie, &row, &init_row, &loc, ip) != 0)
        return out;
    if (row.ra == R_UNDEF) {
        out.kind = PF_CFI_LAST;
        return out;
    }
    if (row.cfa_other || (row.cfa_reg != DW_RSP && row.cfa_reg != DW_RBP) || row.ra != R_OFFSET ||
        row.ra_off != -8 || row.rsp != R_SAME || (row.rbp != R_SAME && row.rbp != R_OFFSET) ||
        row.cfa_off < 8 || row.cfa_off > INT32_MAX || (row.rbp == R_OFFSET && (row.rbp_off >= 0 || row.rbp_off < INT16_MIN)))
        return out;
    out.cfa_off = (int32_t)row.cfa_off;
    out.cfa_is_rbp = row.cfa_reg == DW_RBP;
    out.rbp_off = row.rbp == R_OFFSET ? (int16_t)row.rbp_off : PF_CFI_RBP_KEPT;
    out.kind = PF_CFI_STANDARD;
    return out;
}

/* The shared table's slots are scattered over up to 128 KiB: a thread's stack steps through the same few dozen
 * return addresses again and again, so it keeps them in a page of its own first. */
#define NEAR_SLOTS 64u
static __thread cfi_slot_t near[NEAR_SLOTS];
static __thread uint32_t near_generation;   /* the generation near[] was filled in */

static pf_cfi_rule_t shared_rule(uint64_t ip, int in_signal);

pf_cfi_rule_t pf_cfi_rule(uint64_t ip)
{
    cfi_slot_t *s = &near[(ip * 0x9E3779B97F4A7C15ull) >> 58];
    if (PF_LIKELY(s->key == ip))
        return s->rule;
    pf_cfi_rule_t r = shared_rule(ip, 0);
    s->key = ip;
    s->rule = r;
    return r;
}

pf_cfi_rule_t pf_cfi_rule_in_signal(uint64_t ip)
{
    return shared_rule(ip, 1);
}

static void read_done(int in_signal)
{
    if (!in_signal)
        pf_eh_pages_read_done();    /* may give pages back: a dl_iterate_phdr, not for signal handlers */
}

static size_t table_bytes(uint64_t slots)
{
    return sizeof(cfi_table_t) + slots * sizeof(cfi_slot_t);
}

static cfi_table_t *new_table(uint64_t slots)
{
    cfi_table_t *t = pf_sys_alloc_pages(table_bytes(slots));
    if (t)
        t->mask = slots - 1;
    return t;
}

/* A table taken out of use: its pages back to the system, the mapping kept for readers still in it. */
static void retire_table(cfi_table_t *t)
{
    if (t)
        madvise(t, table_bytes(t->mask + 1), MADV_DONTNEED);
}

/* Puts fresh in use in old's place and retires old; 1 when it did. 0: another thread replaced old first
 * (pf_cfi_forget, or a first table), and fresh is unmapped. */
static int replace_table(cfi_table_t *old, cfi_table_t *fresh)
{
    cfi_table_t *expected = old;
    if (__atomic_compare_exchange_n(&table, &expected, fresh, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        retire_table(old);
        return 1;
    }
    pf_sys_munmap(fresh, table_bytes(fresh->mask + 1));
    return 0;
}

static cfi_table_t *current_table(void)
{
    cfi_table_t *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
    if (PF_LIKELY(t))
        return t;
    cfi_table_t *fresh = new_table(CFI_FIRST_SLOTS);
    if (fresh)
        replace_table(NULL, fresh);
    return __atomic_load_n(&table, __ATOMIC_ACQUIRE);
}

static pf_cfi_rule_t rule_of(const cfi_slot_t *s)
{
    uint64_t bits = __atomic_load_n((const uint64_t *)(const void *)&s->rule, __ATOMIC_RELAXED);
    pf_cfi_rule_t r;
    memcpy(&r, &bits, sizeof r);
    return r;
}

static void put_rule(cfi_table_t *t, uint64_t ip, pf_cfi_rule_t r)
{
    for (uint64_t h = (ip * 0x9E3779B97F4A7C15ull) >> 32, i = 0; i < CFI_PROBES; i++) {
        cfi_slot_t *s = &t->slot[(h + i) & t->mask];
        if (!s->key) {
            s->rule = r;
            s->key = ip;
            t->used++;
            return;
        }
    }
}

/* Replaces old, half full, by a table twice its size holding its published rules. Not in a signal
 * handler (the caller's test): the copy takes a while and the interrupted code may be the grower. */
static void grow_table(cfi_table_t *old)
{
    uint64_t slots = old->mask + 1;
    if (slots >= CFI_MAX_SLOTS || __atomic_exchange_n(&growing, 1, __ATOMIC_ACQUIRE))
        return;
    cfi_table_t *big = __atomic_load_n(&table, __ATOMIC_ACQUIRE) == old ? new_table(slots * 2) : NULL;
    if (big) {
        for (uint64_t i = 0; i < slots; i++) {
            uint64_t key = __atomic_load_n(&old->slot[i].key, __ATOMIC_ACQUIRE);
            if (key > 1)
                put_rule(big, key, rule_of(&old->slot[i]));
        }
        replace_table(old, big);
    }
    __atomic_store_n(&growing, 0, __ATOMIC_RELEASE);
}

static pf_cfi_rule_t shared_rule(uint64_t ip, int in_signal)
{
    cfi_table_t *tab = current_table();
    uint64_t h = (ip * 0x9E3779B97F4A7C15ull) >> 32;
    for (int i = 0; tab && i < CFI_PROBES; i++) {
        cfi_slot_t *s = &tab->slot[(h + (uint64_t)i) & tab->mask];
        uint64_t key = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);
        if (key == ip)
            return rule_of(s);
        if (key == 0) {
            pf_cfi_rule_t r = rule_from_fde(ip);
            read_done(in_signal);
            uint64_t expect = 0;
            if (__atomic_compare_exchange_n(&s->key, &expect, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
                s->rule = r;
                __atomic_store_n(&s->key, ip, __ATOMIC_RELEASE);
                uint64_t used = __atomic_add_fetch(&tab->used, 1, __ATOMIC_RELAXED);
                if (used * 2 >= tab->mask + 1 && !in_signal)
                    grow_table(tab);
            }
            return r;
        }
    }
    pf_cfi_rule_t r = rule_from_fde(ip);   /* a crowded neighbourhood (or no table): read it each time */
    read_done(in_signal);
    return r;
}

/* Swapping a grown table for a small empty one pays off while the rules stepped by after the reads went
 * quiet are far fewer than those read before: a program's start-up, whose imports step through thousands of
 * return addresses once. One whose table grows back to the size it was swapped at (a large working set) is
 * left alone from then on, as is every table past CFI_SHRINKS swaps. */
#define CFI_SHRINKS 8
static uint64_t shrunk_from;        /* slots of the table last swapped out (0: none yet) */
static uint32_t shrinks;

void pf_cfi_quiet(void)
{
    cfi_table_t *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
    uint64_t slots = t ? t->mask + 1 : 0;
    if (slots <= CFI_FIRST_SLOTS || __atomic_load_n(&shrinks, __ATOMIC_RELAXED) >= CFI_SHRINKS ||
        __atomic_exchange_n(&growing, 1, __ATOMIC_ACQUIRE))
        return;
    if (shrunk_from && slots >= shrunk_from) {
        __atomic_store_n(&shrinks, CFI_SHRINKS, __ATOMIC_RELAXED);    /* it needs them: keep it */
    } else {
        cfi_table_t *fresh = new_table(CFI_FIRST_SLOTS);
        if (fresh && replace_table(t, fresh)) {
            shrunk_from = slots;
            __atomic_add_fetch(&shrinks, 1, __ATOMIC_RELAXED);
        }
    }
    __atomic_store_n(&growing, 0, __ATOMIC_RELEASE);
}

int pf_cfi_forget(void)
{
    if (__atomic_add_fetch(&renewals, 1, __ATOMIC_RELAXED) > CFI_RENEWALS)
        return 0;
    cfi_table_t *fresh = new_table(CFI_FIRST_SLOTS);
    if (!fresh)
        return 0;
    /* the table before the generation: a thread that sees the new generation looks rules up in it */
    retire_table(__atomic_exchange_n(&table, fresh, __ATOMIC_ACQ_REL));
    __atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
    return 1;
}

int pf_cfi_renewed(void)
{
    uint32_t g = __atomic_load_n(&generation, __ATOMIC_ACQUIRE);
    if (PF_LIKELY(g == near_generation))
        return 0;
    for (unsigned i = 0; i < NEAR_SLOTS; i++)
        near[i].key = 0;
    near_generation = g;
    return 1;
}

uint64_t pf_cfi_table_slots(void)
{
    cfi_table_t *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
    return t ? t->mask + 1 : 0;
}
