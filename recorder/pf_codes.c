/* pf_codes.c - code object ids. Lookups are lock-free (pf_idtable.h: entries are published once and never
 * changed); a miss takes one lock, describes the code object and writes its record. See pf_codes.h. */
#include "pf_codes.h"

#include <string.h>

#include "pf_idtable.h"
#include "pf_sys.h"
#include "pf_writer.h"

#define PF_CODE_FILENAME_MAX 4096u
#define PF_CODE_NAME_MAX 512u

/* Each id's entry: the code object and its identity when it was described. */
typedef struct pf_code_entry {
    const void *code;
    const void *identity[3];
} pf_code_entry_t;

static pf_idtable_t table = {.entry_bytes = sizeof(pf_code_entry_t)};

/* The file name objects of the import machinery's code (importlib._bootstrap, _bootstrap_external), as
 * their code objects are first described: a frame is the machinery's when its code's co_filename is one of
 * these (one load and a compare or two). Those modules live as long as the interpreter, so no other string
 * takes their names' addresses. */
#define PF_MACHINERY_FILES 8u
static const void *machinery_files[PF_MACHINERY_FILES];
static uint32_t n_machinery_files;      /* published with release after the entry; written under the lock */

static int is_machinery_name(const char *filename)
{
    return strncmp(filename, "<frozen importlib._bootstrap", 28) == 0;
}

static void note_machinery_file(const void *file)
{
    uint32_t n = n_machinery_files;
    for (uint32_t i = 0; i < n; i++)
        if (machinery_files[i] == file)
            return;
    if (n < PF_MACHINERY_FILES) {
        machinery_files[n] = file;
        __atomic_store_n(&n_machinery_files, n + 1, __ATOMIC_RELEASE);
    }
}

/* The key is the address and the identity: a code object's address is reused once it dies (a program that
 * compiles and drops functions gets one address again and again), and keyed on the address alone all those
 * code objects shared one home and one ever longer probe run. */
static uint64_t hash_code(const pf_code_entry_t *k)
{
    uint64_t h = (uint64_t)(uintptr_t)k->code;
    for (int i = 0; i < 3; i++)
        h = (h ^ (uint64_t)(uintptr_t)k->identity[i]) * 0x9E3779B97F4A7C15ull + (uint64_t)i;
    return pf_idtable_hash_fix(h ^ h >> 29);
}

static int same_code(const void *entry, const void *key)
{
    const pf_code_entry_t *a = entry, *b = key;
    return a->code == b->code && a->identity[0] == b->identity[0] && a->identity[1] == b->identity[1] &&
           a->identity[2] == b->identity[2];
}

/* Writes the CODE record for a new id; *machinery: the code is the import machinery's. Returns 0, or -1 when
 * the object is not a code object. */
static int emit_code_record(pf_tls_t *t, const void *code, uint32_t id, int *machinery)
{
    static char filename[PF_CODE_FILENAME_MAX];     /* callers hold the table lock */
    static char name[PF_CODE_NAME_MAX];
    pf_pycode_info_t info;
    if (pf_cfg.py->describe(code, &info, filename, sizeof filename, name, sizeof name) != 0)
        return -1;
    *machinery = is_machinery_name(filename);
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

/* The key of code (its address and identity) in *k. Returns 0, or -1 when code is not a code object. */
static int key_of(const void *code, pf_code_entry_t *k)
{
    k->code = code;
    return code && pf_cfg.py->identify(code, k->identity) == 0 ? 0 : -1;
}

uint32_t pf_codes_id(pf_tls_t *t, const void *code)
{
    pf_code_entry_t k;
    if (key_of(code, &k) != 0)
        return 0;
    uint64_t h = hash_code(&k);
    uint32_t id = pf_idtable_find(&table, h, same_code, &k);
    if (PF_LIKELY(id))
        return id;

    pf_idtable_lock(&table);
    id = pf_idtable_find(&table, h, same_code, &k);     /* another thread may have added it meanwhile */
    if (!id) {
        pf_code_entry_t *e = pf_idtable_reserve(&table, &id);
        int machinery = 0;
        if (e && emit_code_record(t, code, id, &machinery) == 0) {
            *e = k;
            pf_idtable_publish(&table, h, id);
            if (machinery)
                note_machinery_file(k.identity[0]);
        } else {
            id = 0;
        }
    }
    pf_idtable_unlock(&table);
    return id;
}

int pf_codes_drop_machinery(pf_pyframe_t *frames, int n)
{
    uint32_t nm = __atomic_load_n(&n_machinery_files, __ATOMIC_ACQUIRE);
    if (!nm || n <= 2)
        return n;
    /* Only where more than two machinery files are known (the walk leaves out the first two's frames
     * itself): rare, so one plain loop. */
    const size_t off = pf_cfg.py->identity_offset[0];
    int kept = 1;
    for (int i = 1; i < n - 1; i++) {
        const void *file = *(const void *const *)((const char *)frames[i].code + off);
        int machinery = 0;
        for (uint32_t j = 0; j < nm; j++)
            machinery |= file == machinery_files[j];
        frames[kept] = frames[i];
        kept += !machinery;
    }
    frames[kept++] = frames[n - 1];
    return kept;
}

uint32_t pf_codes_machinery_files(const void *files[2])
{
    uint32_t nm = __atomic_load_n(&n_machinery_files, __ATOMIC_ACQUIRE);
    files[0] = nm > 0 ? machinery_files[0] : NULL;
    files[1] = nm > 1 ? machinery_files[1] : NULL;
    return nm;
}

int pf_codes_same(uint32_t id, const void *code)
{
    if (!id || id > pf_idtable_count(&table))
        return 0;
    const pf_code_entry_t *e = pf_idtable_entry(&table, id);
    return e->code == code && e->identity[0] == pf_code_identity(code, 0) &&
           e->identity[1] == pf_code_identity(code, 1) && e->identity[2] == pf_code_identity(code, 2);
}

uint32_t pf_codes_lookup(const void *code)
{
    pf_code_entry_t k;
    if (key_of(code, &k) != 0)
        return 0;
    return pf_idtable_find(&table, hash_code(&k), same_code, &k);
}

void pf_codes_reset(void)
{
    pf_idtable_reset(&table);   /* the machinery's file names stay what they are in the child */
}

void pf_codes_fork_prepare(void)
{
    pf_idtable_lock(&table);
}

void pf_codes_fork_parent(void)
{
    pf_idtable_unlock(&table);
}
