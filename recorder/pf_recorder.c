/* pf_recorder.c - the recorder's state and its life in the process: what start-up (interpose/pf_rt_init.c)
 * and the fork handlers call, in order, and the spawn records the start hooks ask for. */
#include <string.h>

#include "pf_aggregate.h"
#include "pf_clock.h"
#include "pf_codes.h"
#include "pf_lib_pages.h"
#include "pf_modules.h"
#include "pf_objkind.h"
#include "pf_objtable.h"
#include "pf_rec_int.h"
#include "pf_stacks.h"
#include "pf_unwinder.h"
#include "pf_watch_glue.h"
#include "pf_writer.h"

__thread pf_tls_t pf_tls __attribute__((tls_model("initial-exec")));
pf_config_t pf_cfg;
pf_recorder_host_t pf_host;

/* Every memcpy of the recorder lands here: this is pf_rec_memcpy (pf_rec_int.h), not the exported hook.
 * Start-up fills pf_host before anything is recorded; until then (a unit test) a plain loop the compiler
 * must not turn back into a memcpy call. */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) void *memcpy(void *dst, const void *src, size_t n)
{
    if (PF_LIKELY(pf_host.memcpy != NULL))
        return pf_host.memcpy(dst, src, n);
    unsigned char *d = dst;
    const unsigned char *s = src;
    for (size_t i = 0; i < n; i++)
        d[i] = s[i];
    return dst;
}

int pf_recorder_tracks(const void *addr)
{
    return pf_objtable_maybe(addr) && pf_objtable_lookup((uintptr_t)addr, NULL);
}

/* The interpreter's version, from the writer's info: what pf_recorder_prepare lays dict keys out by. */
static uint32_t python_hex;

int pf_recorder_open(const char *base_path, int is_root, const pf_writer_info_t *info)
{
    pf_clock_init();
    python_hex = info->python_hex;
    int rc = pf_objtable_init();
    if (rc == 0 && pf_cfg.exact)
        pf_objtable_dense(1);   /* a failure leaves every object to the hashed slots */
    pf_writer_info_t with = *info;
    with.on_aggregate_size = pf_aggregate_switch_by_size;
    return rc == 0 ? pf_writer_open(base_path, is_root, &with) : rc;
}

void pf_recorder_prepare(void)
{
    pf_objkind_init(python_hex);
    if (pf_cfg.native)
        pf_unwinder_start();
}

void pf_recorder_started(pf_tls_t *t)
{
    pf_watch_glue_init(t);
    pf_lib_pages_give_back();   /* start-up is over: what only loading read leaves the program's RSS */
}

void pf_recorder_fork_prepare(void)
{
    pf_codes_fork_prepare();
    pf_stacks_fork_prepare();
    pf_writer_fork_prepare();
    pf_objtable_fork_prepare();
}

void pf_recorder_fork_parent(void)
{
    pf_objtable_fork_parent();
    pf_writer_fork_parent();
    pf_stacks_fork_parent();
    pf_codes_fork_parent();
}

/* The child has one thread and the parent's tables: a new file, fresh code ids and module list. */
void pf_recorder_fork_child(pf_tls_t *t)
{
    pf_objtable_fork_child();
    pf_writer_fork_parent();
    pf_codes_reset();
    pf_stacks_reset();
    pf_aggregate_fork_child();     /* --aggregate: the parent's sites are not the child's */
    pf_modules_reset();
    int rc = pf_writer_reopen_child();
    if (rc < 0) {
        __atomic_store_n(&pf_cfg.enabled, 0, __ATOMIC_RELEASE);
        pf_log("a forked child is not profiled: it cannot create its profile (%s)", strerror(-rc));
    }
    pf_record_thread_reset(t);
    pf_api_fork_child(t);
    pf_watch_glue_fork_child(t);
}

int pf_recorder_thread_has_chunk(const pf_tls_t *t)
{
    return t->ready && t->chunk_gen == pf_writer_generation();
}

void pf_record_spawn(pf_tls_t *t, int kind, uint64_t child, uint64_t t_ns, uint32_t child_flags,
                     const char *command, uint16_t command_len)
{
    pf_stack_t st;
    pf_stack_capture_python(t, &st);
    uint32_t sid, bytes;
    char *rec = pf_record_reserve_stacked(t, &st, sizeof(pf_rec_spawn_t) + command_len, &sid, &bytes);
    if (!rec)
        return;
    memset(rec + sizeof(pf_rec_header_t), 0, bytes - sizeof(pf_rec_header_t));
    pf_rec_spawn_t *s = (pf_rec_spawn_t *)(rec + sizeof(pf_rec_header_t));
    s->t_ns = t_ns;
    s->child = child;
    s->tid = t->tid;
    s->child_flags = child_flags;
    s->command_len = command_len;
    pf_stacks_fields(&st, sid, &s->flags, &s->n_py, &s->n_native);
    pf_stacks_store_tail(&st, sid, s + 1);
    memcpy((char *)(s + 1) + pf_stacks_tail_bytes(&st, sid), command, command_len);
    pf_writer_commit(t, rec, PF_REC_SPAWN, (uint16_t)kind, bytes);
}
