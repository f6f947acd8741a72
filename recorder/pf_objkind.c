/* pf_objkind.c - what Python object a tracked block is (pf_objkind.h).
 *
 * Three tests, each on memory that is the block's own (valid at the moments it is asked) except where said:
 *  - an object: its type word, after the reference count (str, bytes, bytearray, int, float), or after the
 *    garbage collector's header of two words too (list, dict, tuple, set, frozenset: 3.8-3.13 alike);
 *  - a dict's keys table (a list or dict grows by its storage, not its 56-byte object): the header's sizes
 *    must give the allocation's size exactly, by the formula of new_keys_object for the version (3.8-3.10:
 *    refcnt, size, lookup, usable, nentries, indices; 3.11+: refcnt, log2 size, log2 index bytes, kind,
 *    version, usable, nentries, indices), and its counts must fit in it;
 *  - a list's item array: a PyMem block whose first two words point at objects whose type's type is
 *    `type` (or a metaclass of type). Those objects are not the block's: they are read with
 *    process_vm_readv, which answers EFAULT where a word was no pointer to mapped memory. (At list_dealloc
 *    the items were released first: their memory may be reused, but read this way it cannot fault.)
 */
#include <dlfcn.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pf_copy_rule.h"
#include "pf_objkind.h"
#include "pf_objtable.h"
#include "pf_rec_int.h"
#include "pf_sys.h"

static uintptr_t type_of_kind[PF_OBJ_KINDS];
static uintptr_t frozenset_type, type_type;
static unsigned py_minor;

/* The kinds an object's type word tells, found by a multiplicative hash of the word into a table where no
 * two of those types share a slot. The tests one type after the other (five plain types, then four GC
 * ones) were most of this function's instructions, run at every free under --exact, and its branch the
 * worst predicted. */
#define TYPE_SLOT_BITS 6u
typedef struct type_slot {
    uintptr_t type;
    uint8_t kind;       /* PF_OBJ_UNKNOWN: an empty slot */
    uint8_t gc;         /* the type word follows the garbage collector's header */
} type_slot_t;
static type_slot_t type_slots[1u << TYPE_SLOT_BITS];
static uint64_t type_mult;  /* 0 while none kept the types apart (never seen): the table stays empty and
                               every kind unknown, as before the types are found */

/* The smallest item array the list test reads (pymalloc serves 512 bytes and less). */
#define PF_LIST_ITEMS_MIN 512u

/* Kinds whose objects carry the garbage collector's header before them (16 bytes on 3.8-3.13). */
#define PF_GC_HEAD_BYTES 16u

static unsigned type_slot_of(uintptr_t type, uint64_t mult)
{
    return (unsigned)(((uint64_t)type * mult) >> (64 - TYPE_SLOT_BITS));
}

/* Fills type_slots with the types object_kind tells, under the first multiplier (of a fixed sequence) that
 * gives each its own slot: ten types in 64 slots, one multiplier in five or so. */
static void hash_types(void)
{
    static const pf_obj_kind_t plain[] = {PF_OBJ_STR, PF_OBJ_BYTES, PF_OBJ_BYTEARRAY, PF_OBJ_INT, PF_OBJ_FLOAT};
    static const pf_obj_kind_t gc[] = {PF_OBJ_LIST, PF_OBJ_DICT, PF_OBJ_TUPLE, PF_OBJ_SET};
    type_slot_t want[16];
    int n = 0;
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        want[n++] = (type_slot_t){type_of_kind[plain[i]], (uint8_t)plain[i], 0};
    for (size_t i = 0; i < sizeof gc / sizeof *gc; i++)
        want[n++] = (type_slot_t){type_of_kind[gc[i]], (uint8_t)gc[i], 1};
    want[n++] = (type_slot_t){frozenset_type, PF_OBJ_SET, 1};
    uint64_t m = 0x9E3779B97F4A7C15ull;
    for (int tries = 0; tries < 4096; tries++, m = m * 6364136223846793005ull + 1442695040888963407ull) {
        uint64_t mult = m | 1;
        int ok = 1;
        memset(type_slots, 0, sizeof type_slots);
        for (int i = 0; i < n && ok; i++) {
            if (!want[i].type)
                continue;   /* not found in this interpreter: no object has it */
            type_slot_t *slot = &type_slots[type_slot_of(want[i].type, mult)];
            ok = slot->kind == PF_OBJ_UNKNOWN;
            *slot = want[i];
        }
        if (ok) {
            type_mult = mult;
            return;
        }
    }
    memset(type_slots, 0, sizeof type_slots);
    type_mult = 0;
}

void pf_objkind_init(uint32_t python_hex)
{
    static const char *const names[PF_OBJ_KINDS] = {
        [PF_OBJ_STR] = "PyUnicode_Type", [PF_OBJ_BYTES] = "PyBytes_Type", [PF_OBJ_BYTEARRAY] = "PyByteArray_Type",
        [PF_OBJ_LIST] = "PyList_Type",    [PF_OBJ_DICT] = "PyDict_Type",   [PF_OBJ_TUPLE] = "PyTuple_Type",
        [PF_OBJ_SET] = "PySet_Type",      [PF_OBJ_INT] = "PyLong_Type",    [PF_OBJ_FLOAT] = "PyFloat_Type",
    };
    for (int k = 1; k < PF_OBJ_KINDS; k++)
        type_of_kind[k] = (uintptr_t)dlsym(RTLD_DEFAULT, names[k]);
    frozenset_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyFrozenSet_Type");
    type_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyType_Type");
    py_minor = python_hex >> 24 == 3 ? (python_hex >> 16 & 0xffu) : 0;
    hash_types();
}

static uintptr_t word(const pf_objinfo_t *o, size_t i)
{
    uintptr_t w;
    memcpy(&w, (const char *)o->addr + i * sizeof w, sizeof w);
    return w;
}

pf_obj_kind_t pf_objkind_str_bytes(const pf_objinfo_t *o)
{
    if (o->domain != PF_DOMAIN_PYOBJ || o->size < 2 * sizeof(uintptr_t) || !type_of_kind[PF_OBJ_STR])
        return PF_OBJ_UNKNOWN;
    uintptr_t type = word(o, 1);
    return type == type_of_kind[PF_OBJ_STR] ? PF_OBJ_STR : type == type_of_kind[PF_OBJ_BYTES] ? PF_OBJ_BYTES : PF_OBJ_UNKNOWN;
}

/* The kind whose type object is `type`, where its type word lies (gc: after the collector's header). */
static inline pf_obj_kind_t kind_of_type(uintptr_t type, int gc)
{
    const type_slot_t *e = &type_slots[type_slot_of(type, type_mult)];
    return e->type == type && e->kind != PF_OBJ_UNKNOWN && e->gc == gc ? (pf_obj_kind_t)e->kind : PF_OBJ_UNKNOWN;
}

/* Inline: its type tests are the whole of most calls. */
static inline __attribute__((always_inline)) pf_obj_kind_t object_kind(const pf_objinfo_t *o)
{
    pf_obj_kind_t k = kind_of_type(word(o, 1), 0);
    if (k != PF_OBJ_UNKNOWN || o->size < PF_GC_HEAD_BYTES + 2 * sizeof(uintptr_t))
        return k;
    return kind_of_type(word(o, PF_GC_HEAD_BYTES / sizeof(uintptr_t) + 1), 1);
}

/* USABLE_FRACTION of dictobject.c, the same on every version. */
static uint64_t usable_fraction(uint64_t n) { return (n << 1) / 3; }

static int counts_fit(int64_t refcnt, int64_t usable, int64_t nentries, uint64_t usable_max)
{
    return refcnt >= 0 && refcnt < (1ll << 40) && usable >= 0 && (uint64_t)usable <= usable_max && nentries >= 0 &&
           (uint64_t)nentries <= usable_max;
}

static uint64_t hdr_word(const unsigned char *hdr, size_t i)
{
    uint64_t w;
    memcpy(&w, hdr + i * sizeof w, sizeof w);
    return w;
}

/* The bytes of a keys table's header the tests below read. */
#define PF_DICT_HEADER_BYTES 40u

/* 3.8-3.10: {Py_ssize_t dk_refcnt, dk_size; lookup func; Py_ssize_t dk_usable, dk_nentries; indices[]},
 * allocated as 40 + index bytes x size + 24 x usable. hdr: the block's first PF_DICT_HEADER_BYTES. */
static int dict_keys_38(const unsigned char *hdr, uint64_t block_size)
{
    if (block_size < 40 + 8 + 24 * 5)
        return 0;
    uint64_t size = hdr_word(hdr, 1);
    if (size < 8 || size > (1ull << 40) || (size & (size - 1)) || !hdr_word(hdr, 2))
        return 0;
    uint64_t es = size <= 0xff ? 1 : size <= 0xffff ? 2 : size <= 0xffffffffull ? 4 : 8;
    uint64_t usable_max = usable_fraction(size);
    return block_size == 40 + es * size + 24 * usable_max &&
           counts_fit((int64_t)hdr_word(hdr, 0), (int64_t)hdr_word(hdr, 3), (int64_t)hdr_word(hdr, 4), usable_max);
}

/* 3.11-3.13: {Py_ssize_t dk_refcnt; uint8 log2_size, log2_index_bytes, kind; uint32 version; Py_ssize_t
 * dk_usable, dk_nentries; indices[]}, allocated as 32 + 2^log2_index_bytes + (24 general, 16 unicode or
 * split entries) x usable. */
static unsigned index_log2_bytes(unsigned log2_size)
{
    return log2_size < 8 ? log2_size : log2_size < 16 ? log2_size + 1 : log2_size < 32 ? log2_size + 2 : log2_size + 3;
}

static int dict_keys_311(const unsigned char *hdr, uint64_t block_size)
{
    if (block_size < 32 + 8 + 16 * 5)
        return 0;
    unsigned log2_size = hdr[8], log2_bytes = hdr[9], kind = hdr[10];
    if (log2_size < 3 || log2_size > 40 || kind > 2)
        return 0;
    uint64_t usable_max = usable_fraction(1ull << log2_size);
    return log2_bytes == index_log2_bytes(log2_size) &&
           block_size == 32 + (1ull << log2_bytes) + (kind == 0 ? 24 : 16) * usable_max &&
           counts_fit((int64_t)hdr_word(hdr, 0), (int64_t)hdr_word(hdr, 2), (int64_t)hdr_word(hdr, 3), usable_max);
}

static int dict_keys(const unsigned char *hdr, uint64_t block_size)
{
    if (py_minor >= 8 && py_minor <= 10)
        return dict_keys_38(hdr, block_size);
    return py_minor >= 11 && py_minor <= 13 && dict_keys_311(hdr, block_size);
}

/* Reads n words at the addresses in from[] into to[], without faulting: 1 when all were readable. */
static int read_words(int n, const uintptr_t from[], uintptr_t to[])
{
    struct iovec local[2], remote[2];
    for (int i = 0; i < n; i++) {
        local[i] = (struct iovec){&to[i], sizeof to[i]};
        remote[i] = (struct iovec){(void *)from[i], sizeof from[i]};
    }
    return syscall(SYS_process_vm_readv, (long)pf_cfg.pid, local, (unsigned long)n, remote, (unsigned long)n, 0UL) ==
           (long)(n * sizeof(uintptr_t));
}

/* 1 when t is one of the type objects the kinds are told by (each is a type: its type is `type`). */
static int known_type(uintptr_t t)
{
    for (int k = 0; k < PF_OBJ_KINDS; k++)
        if (t && t == type_of_kind[k])
            return 1;
    return 0;
}

/* 1 when the block's first two words point at objects whose type is a type (its type being `type`, or a
 * metaclass whose type is `type`). */
static int object_pointers(const pf_objinfo_t *o)
{
    if (o->size < 2 * sizeof(uintptr_t) || o->size % sizeof(uintptr_t) || !type_type)
        return 0;
    uintptr_t at[2], types[2], metas[2];
    for (int i = 0; i < 2; i++) {
        uintptr_t p = word(o, (size_t)i);
        if (!p || p % sizeof(uintptr_t) || (p >= o->addr && p < o->addr + o->size))
            return 0;
        at[i] = p + sizeof(uintptr_t);
    }
    if (!read_words(2, at, types) || !types[0] || !types[1])
        return 0;
    /* A type the runtime knows (str, int, tuple...: a list's items mostly) is a type: no second call */
    int n = 0, ask[2];
    for (int i = 0; i < 2; i++) {
        metas[i] = known_type(types[i]) ? type_type : 0;
        if (!metas[i]) {
            ask[n] = i;
            at[n++] = types[i] + sizeof(uintptr_t);
        }
    }
    uintptr_t read[2];
    if (n && !read_words(n, at, read))
        return 0;
    for (int k = 0; k < n; k++)
        metas[ask[k]] = read[k];
    for (int i = 0; i < 2; i++) {
        if (metas[i] == type_type)
            continue;
        uintptr_t meta_at = metas[i] + sizeof(uintptr_t), meta_type;
        if (!metas[i] || !read_words(1, &meta_at, &meta_type) || meta_type != type_type)
            return 0;
    }
    return 1;
}

/* pf_objkind_of past an object's type word: a dict's keys table, a list's item array. */
static __attribute__((noinline)) pf_obj_kind_t storage_kind(const pf_objinfo_t *o)
{
    /* keys tables: PyObject_Malloc up to 3.12, PyMem_Malloc in 3.13 */
    if (o->size >= PF_DICT_HEADER_BYTES && dict_keys((const unsigned char *)o->addr, o->size))
        return PF_OBJ_DICT;
    /* list_resize takes its item array from PyMem_Realloc. Only arrays past pymalloc's small blocks are
     * asked (a list of more than 64 items): the test costs two system calls, and --exact frees every small
     * list of a program (a 3-item list each: 2.5 times the run's time, measured on bench/workloads/churn.py);
     * a small list's object, also freed, says `list` by its type word */
    if (o->domain == PF_DOMAIN_PYMEM && o->size > PF_LIST_ITEMS_MIN && object_pointers(o))
        return PF_OBJ_LIST;
    return PF_OBJ_UNKNOWN;
}

/* Inlined in its callers (link-time optimization), the rarer tests apart: the free of every tracked block
 * asks it, and its call saved and restored six registers for the tests only a few blocks reach. */
__attribute__((always_inline)) inline pf_obj_kind_t pf_objkind_of(const pf_objinfo_t *o)
{
    if ((o->domain != PF_DOMAIN_PYOBJ && o->domain != PF_DOMAIN_PYMEM) || o->size < 2 * sizeof(uintptr_t) ||
        !type_of_kind[PF_OBJ_STR])
        return PF_OBJ_UNKNOWN;
    if (o->domain == PF_DOMAIN_PYOBJ) {
        pf_obj_kind_t k = object_kind(o);
        if (k != PF_OBJ_UNKNOWN)
            return k;
    }
    return storage_kind(o);
}

/* The tracked keys table whose entries start at addr (dictresize copies a table's entries into the next
 * one's, past its index: too far from the table's start for pf_objtable_find_start), or 0. The table is
 * asked for at each offset its index could have; its header is read through process_vm_readv, since an
 * object found at such an address need not contain addr. */
static int dict_entries_at(uintptr_t addr)
{
    for (unsigned log2_size = 3; log2_size <= 34; log2_size++) {
        uint64_t before = py_minor <= 10 ? 40 + (1ull << log2_size) * (log2_size < 8 ? 1 : log2_size < 16 ? 2 : log2_size < 32 ? 4 : 8)
                                         : 32 + (1ull << index_log2_bytes(log2_size));
        if (before > addr)
            return 0;
        uintptr_t start = addr - before;
        pf_objinfo_t o;
        unsigned char hdr[PF_DICT_HEADER_BYTES];
        if (!pf_objtable_maybe((const void *)start) || !pf_objtable_lookup(start, &o) || o.addr + o.size <= addr ||
            (o.domain != PF_DOMAIN_PYOBJ && o.domain != PF_DOMAIN_PYMEM) ||
            pf_sys_read_pid((long)pf_cfg.pid, (const void *)start, hdr, sizeof hdr))
            continue;
        if (dict_keys(hdr, o.size))
            return 1;
    }
    return 0;
}

pf_obj_kind_t pf_objkind_at(uintptr_t addr)
{
    pf_objinfo_t o;
    if (pf_objtable_find_start(addr, PF_COPY_MAX_HEADER, &o))
        return pf_objkind_of(&o);
    return py_minor >= 8 && py_minor <= 13 && type_of_kind[PF_OBJ_DICT] && dict_entries_at(addr) ? PF_OBJ_DICT : PF_OBJ_UNKNOWN;
}
