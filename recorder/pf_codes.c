/* pf_codes.c - code object ids. Lookups are lock-free (entries are published once and never changed);
 * a miss takes one lock, describes the code object and writes its record. See pf_codes.h. */
#include "pf_codes.h"

#include <string.h>

#include "pf_sys.h"
#include "pf_writer.h"

#define PF_CODES_SLOTS (1u << 16)       /* distinct code objects per process (a stale entry counts too) */
#define PF_CODES_MAX_USED (PF_CODES_SLOTS / 4 * 3)
#define PF_CODE_FILENAME_MAX 4096u
#define PF_CODE_NAME_MAX 512u

typedef struct pf_code_slot {
    const void *code;               /* published last (release); NULL = empty */
    const void *identity[3];
    uint32_t id;
} pf_code_slot_t;

static pf_code_slot_t *slots;
static uint32_t used;
static uint32_t next_id = 1;
static pf_spinlock_t lock;

static inline uint32_t home_of(const void *code)
{
    uint64_t h = (uint64_t)(uintptr_t)code * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 48) & (PF_CODES_SLOTS - 1);
}

/* Probes for code with the given identity. Returns the id, or 0 (and the first empty slot in *empty). */
static uint32_t probe(const void *code, const void *const identity[3], uint32_t *empty)
{
    for (uint32_t i = home_of(code), n = 0; n < PF_CODES_SLOTS; i = (i + 1) & (PF_CODES_SLOTS - 1), n++) {
        const void *c = __atomic_load_n(&slots[i].code, __ATOMIC_ACQUIRE);
        if (!c) {
            *empty = i;
            return 0;
        }
        if (c == code && memcmp(slots[i].identity, identity, sizeof slots[i].identity) == 0)
            return slots[i].id;
    }
    *empty = UINT32_MAX;
    return 0;
}

/* Writes the CODE record for a new id. Returns 0, or -1 when the object is not a code object. */
static int emit_code_record(pf_tls_t *t, const void *code, uint32_t id)
{
    static char filename[PF_CODE_FILENAME_MAX];     /* callers hold the table lock */
    static char name[PF_CODE_NAME_MAX];
    pf_pycode_info_t info;
    if (pf_cfg.py->describe(code, &info, filename, sizeof filename, name, sizeof name) != 0)
        return -1;
    uint32_t fixed = (uint32_t)(sizeof(pf_rec_header_t) + sizeof(pf_rec_code_t));
    uint32_t room = PF_CHUNK_PAYLOAD_MAX - fixed - info.filename_len - info.name_len - 8;
    uint32_t lt_len = info.linetable_len < room ? info.linetable_len : room;  /* huge tables: cut */
    uint32_t bytes = pf_align8(fixed + info.filename_len + info.name_len + lt_len);
    char *rec = pf_writer_reserve(t, bytes);
    if (!rec)
        return 0;   /* the id stays valid; the reporter shows an unknown frame */
    pf_rec_code_t *c = (pf_rec_code_t *)(rec + sizeof(pf_rec_header_t));
    c->code_id = id;
    c->firstlineno = info.firstlineno;
    c->filename_len = info.filename_len;
    c->name_len = info.name_len;
    c->linetable_len = lt_len;
    c->reserved = 0;
    char *tail = (char *)(c + 1);
    memcpy(tail, filename, info.filename_len);
    memcpy(tail + info.filename_len, name, info.name_len);
    memcpy(tail + info.filename_len + info.name_len, info.linetable, lt_len);
    memset(tail + info.filename_len + info.name_len + lt_len, 0,
           bytes - fixed - info.filename_len - info.name_len - lt_len);
    pf_writer_commit(t, rec, PF_REC_CODE, (uint16_t)info.linetable_format, bytes);
    return 0;
}

uint32_t pf_codes_id(pf_tls_t *t, const void *code)
{
    const void *identity[3];
    if (!code || pf_cfg.py->identify(code, identity) != 0)
        return 0;
    if (PF_UNLIKELY(!slots)) {
        pf_spin_lock(&lock);
        if (!slots)
            slots = pf_sys_alloc_pages(sizeof(pf_code_slot_t) * PF_CODES_SLOTS);
        pf_spin_unlock(&lock);
        if (!slots)
            return 0;
    }
    uint32_t empty = UINT32_MAX;    /* probe sets it whenever it returns 0; said for the compiler */
    uint32_t id = probe(code, identity, &empty);
    if (PF_LIKELY(id))
        return id;

    pf_spin_lock(&lock);
    id = probe(code, identity, &empty);     /* another thread may have added it meanwhile */
    if (!id && empty != UINT32_MAX && used < PF_CODES_MAX_USED) {
        id = next_id++;
        if (emit_code_record(t, code, id) == 0) {
            pf_code_slot_t *s = &slots[empty];
            memcpy(s->identity, identity, sizeof s->identity);
            s->id = id;
            __atomic_store_n(&s->code, code, __ATOMIC_RELEASE);
            used++;
        } else {
            id = 0;
        }
    }
    pf_spin_unlock(&lock);
    return id;
}

uint32_t pf_codes_lookup(const void *code)
{
    const void *identity[3];
    uint32_t empty = UINT32_MAX;    /* probe sets it whenever it returns 0; said for the compiler */
    pf_code_slot_t *table = __atomic_load_n(&slots, __ATOMIC_ACQUIRE);
    if (!code || !table || pf_cfg.py->identify(code, identity) != 0)
        return 0;
    return probe(code, identity, &empty);
}

void pf_codes_reset(void)
{
    if (slots)
        pf_sys_munmap(slots, sizeof(pf_code_slot_t) * PF_CODES_SLOTS);
    slots = NULL;
    used = 0;
    next_id = 1;
    lock.locked = 0;
}

void pf_codes_fork_prepare(void)
{
    pf_spin_lock(&lock);
}

void pf_codes_fork_parent(void)
{
    pf_spin_unlock(&lock);
}
