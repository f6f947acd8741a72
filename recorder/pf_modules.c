/* pf_modules.c - executable segments of loaded objects, written as PF_REC_MODULE records. */
#include "pf_modules.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "pf_eh_pages.h"
#include "pf_runtime_libs.h"
#include "pf_sys.h"
#include "pf_writer.h"

#define PF_MAX_MODULE_SEGMENTS 2048u
#define PF_MAX_RUNTIME_SEGMENTS 16u

typedef struct pf_segment {
    uint64_t start, end;
    int runtime;                    /* pf_path_is_runtime_library */
} pf_segment_t;

static pf_segment_t known[PF_MAX_MODULE_SEGMENTS];
static uint32_t n_known;            /* published with release after the entry is filled */
static pf_spinlock_t lock;
/* The runtime's segments again, apart: nearly every frame of a native stack is in one of these few */
static pf_segment_t runtime[PF_MAX_RUNTIME_SEGMENTS];
static uint32_t n_runtime;          /* published as n_known */
static unsigned long long scanned_adds = ~0ull;    /* the loader's count of objects added, at the last scan */

/* The known segment holding ip, or NULL. */
static const pf_segment_t *segment_of(uint64_t ip)
{
    uint32_t n = __atomic_load_n(&n_known, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++)
        if (ip >= known[i].start && ip < known[i].end)
            return &known[i];
    return NULL;
}

static int is_known(uint64_t ip)
{
    return segment_of(ip) != NULL;
}

static void write_module(pf_tls_t *t, uint64_t start, uint64_t end, uint64_t bias, const char *path)
{
    uint32_t path_len = (uint32_t)strnlen(path, 4096);
    uint32_t bytes = pf_align8((uint32_t)(sizeof(pf_rec_header_t) + sizeof(pf_rec_module_t)) + path_len);
    char *rec = pf_writer_reserve(t, bytes);
    if (!rec)
        return;
    memset(rec + sizeof(pf_rec_header_t), 0, bytes - sizeof(pf_rec_header_t));
    pf_rec_module_t *m = (pf_rec_module_t *)(rec + sizeof(pf_rec_header_t));
    m->start = start;
    m->end = end;
    m->load_bias = bias;
    m->path_len = path_len;
    memcpy(m + 1, path, path_len);
    pf_writer_commit(t, rec, PF_REC_MODULE, 0, bytes);
}

/* The main program has no name in dl_iterate_phdr; the reporter runs in another process, so resolve it. */
static const char *exe_path(void)
{
    static char path[4096];
    if (!path[0]) {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        path[n > 0 ? n : 0] = '\0';
    }
    return path;
}

static int add_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    pf_tls_t *t = arg;
    const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : exe_path();
    if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds)
        scanned_adds = info->dlpi_adds;
    int is_runtime = pf_path_is_runtime_library(path);
    pf_eh_pages_add(info, size);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uint64_t start = info->dlpi_addr + ph->p_vaddr;
        uint64_t end = start + ph->p_memsz;
        if (is_known(start) || n_known >= PF_MAX_MODULE_SEGMENTS)
            continue;
        known[n_known] = (pf_segment_t){start, end, is_runtime};
        __atomic_store_n(&n_known, n_known + 1, __ATOMIC_RELEASE);
        if (is_runtime && n_runtime < PF_MAX_RUNTIME_SEGMENTS) {
            runtime[n_runtime] = known[n_known - 1];
            __atomic_store_n(&n_runtime, n_runtime + 1, __ATOMIC_RELEASE);
        }
        write_module(t, start, end, info->dlpi_addr, path);
    }
    return 0;
}

static int read_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
    if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds)
        *(unsigned long long *)arg = info->dlpi_adds;
    return 1;       /* the count is the same in every object's entry */
}

/* The segment of ip, scanning the loaded objects again first when ip is in none known and objects were
 * added since the last scan (JIT code stays in none; it must not cost a scan at every stack). */
static const pf_segment_t *segment_after_scan(pf_tls_t *t, uint64_t ip)
{
    unsigned long long adds = ~0ull - 1;
    dl_iterate_phdr(read_adds, &adds);
    pf_spin_lock(&lock);
    if (!is_known(ip) && adds != __atomic_load_n(&scanned_adds, __ATOMIC_RELAXED))
        dl_iterate_phdr(add_object, t);
    pf_spin_unlock(&lock);
    return segment_of(ip);
}

void pf_modules_note(pf_tls_t *t, const uint64_t *ips, int n)
{
    for (int i = 0; i < n; i++) {
        /* an ip in no object at all (JIT code) stays unknown; do not rescan for the rest of this stack */
        if (PF_UNLIKELY(!is_known(ips[i])) && !segment_after_scan(t, ips[i]))
            break;
    }
}

/* 1 when ip lies in one of the first nr runtime segments: the interpreter's first (dl_iterate_phdr gives the
 * main program first), where nearly every frame of a stack of interpreter frames is, so most IPs take one
 * subtraction and one compare. */
static inline int in_runtime(uint64_t ip, uint32_t nr)
{
    for (uint32_t k = 0; k < nr; k++)
        if (ip - runtime[k].start < runtime[k].end - runtime[k].start)
            return 1;
    return 0;
}

/* 1 when ip is a native site: in a known object of the program's. An ip in none known scans the loaded
 * objects again (once a stack: *scanned; *nr then counts the runtime segments it may have added), and
 * else counts as the runtime's. */
static int is_site(pf_tls_t *t, uint64_t ip, uint32_t *nr, int *scanned)
{
    if (PF_LIKELY(in_runtime(ip, *nr)))
        return 0;
    const pf_segment_t *seg = segment_of(ip);
    if (!seg && !*scanned) {
        seg = segment_after_scan(t, ip);
        *scanned = 1;
        *nr = __atomic_load_n(&n_runtime, __ATOMIC_ACQUIRE);
    }
    return seg && !seg->runtime;
}

uint64_t pf_eval_lo, pf_eval_hi;

void pf_modules_find_eval_loop(void)
{
    if (pf_eval_hi)
        return;
    void *eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (eval && dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size) {
        pf_eval_lo = (uint64_t)(uintptr_t)eval;
        pf_eval_hi = pf_eval_lo + sym->st_size;
    }
}

int pf_modules_native_cut(pf_tls_t *t, const uint64_t *ips, int n)
{
    int scanned = 0;
    uint32_t nr = __atomic_load_n(&n_runtime, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        if (is_site(t, ips[i], &nr, &scanned))
            return i + 1;
        if (pf_modules_in_eval_loop(ips[i]))
            return 0;   /* the frames beyond called the Python code that allocates: not its site */
    }
    return 0;
}

void pf_modules_sites(pf_tls_t *t, const uint64_t *ips, int n, uint8_t *site_at)
{
    int scanned = 0;
    uint32_t nr = __atomic_load_n(&n_runtime, __ATOMIC_ACQUIRE);
    site_at[n] = PF_NO_SITE;
    for (int i = n - 1; i >= 0; i--)
        site_at[i] = is_site(t, ips[i], &nr, &scanned) ? (uint8_t)i
                     : pf_modules_in_eval_loop(ips[i]) ? PF_NO_SITE : site_at[i + 1];
}

static uint64_t self_lo, self_hi;

typedef struct pf_text_query {
    uint64_t probe, lo, hi;
} pf_text_query_t;

static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
    pf_text_query_t *q = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && q->probe >= start && q->probe < start + ph->p_memsz) {
            q->lo = start;
            q->hi = start + ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

int pf_modules_text_range(const void *code, uint64_t *lo, uint64_t *hi)
{
    pf_text_query_t q = {(uint64_t)(uintptr_t)code, 0, 0};
    if (!code || !dl_iterate_phdr(find_text, &q))
        return 0;
    *lo = q.lo;
    *hi = q.hi;
    return 1;
}

int pf_modules_is_self(uint64_t ip)
{
    if (PF_UNLIKELY(!self_hi))
        pf_modules_text_range((const void *)pf_modules_is_self, &self_lo, &self_hi);
    return ip >= self_lo && ip < self_hi;
}

void pf_modules_reset(void)
{
    n_known = 0;
    n_runtime = 0;
    scanned_adds = ~0ull;
    lock.locked = 0;
}
