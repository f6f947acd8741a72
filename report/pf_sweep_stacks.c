/* pf_sweep_stacks.c - what the sweep works out once per interned stack (pf_sweep_int.h): its charge's memo
 * and its native site, kept in arrays by stack id where the loader has them (proc_state_t.stack_at): an
 * exact profile refers to a few thousand stacks from tens of millions of records, and hashing each record's
 * key, and each native frame's address, was most of the time its sweep took. */
#include <string.h>

#include "pf_sweep_int.h"
#include "pf_symbols_int.h"

/* The native_cache value of an IP in the interpreter's loop: the search for a site ends there. */
#define AT_EVAL_LOOP UINT64_MAX

/* What native_cache keeps for ip, innermost-first index i, in module mo: the site's name interned, plus 1;
 * 1 for a runtime frame; AT_EVAL_LOOP for a return into the interpreter's loop. */
static uint64_t classify_frame(sweeper_t *S, const module_t *mo, uint64_t ip, uint16_t i)
{
    const char *path = S->m->strings[mo->path];
    char name[512];
    /* return addresses point after the call: look up the call itself */
    pf_symbols_name(S->symbols, path, ip - mo->bias - (i > 0), name, sizeof name);
    if (!pf_symbols_is_runtime_library(path))
        return (uint64_t)pf_model_intern(S->m, name, strlen(name)) + 1;
    static const char eval[] = "_PyEval_EvalFrameDefault (";
    return !strncmp(name, eval, sizeof eval - 1) ? AT_EVAL_LOOP : 1;
}

/* The innermost native frame outside the interpreter, libc and pyflow, as an interned "symbol (library)";
 * 0 when there is none (or no native stack was captured). None past the innermost return into the
 * interpreter's loop: the frames beyond called the Python code running there, and the recorder keeps none
 * of them (recorder/pf_modules.c: pf_modules_native_cut), so a whole stack (PYFLOW_WHOLE_STACKS=1) and a
 * profile from a recorder that kept a callback's caller read the same. */
uint32_t pf_sweep_native_site(sweeper_t *S, uint32_t proc, const uint64_t *ips, uint16_t n)
{
    const proc_state_t *P = &S->L->procs[proc];
    for (uint16_t i = 0; i < n; i++) {
        uint64_t ip = ips[i];
        int created;
        uint64_t *v = pf_map_put(&S->native_cache, pf_sweep_key3(proc, ip, 0x5e), &created);
        if (created) {
            *v = 1;     /* none, unless a module below says otherwise */
            for (size_t k = 0; k < P->n_modules; k++) {
                if (ip >= P->modules[k].start && ip < P->modules[k].end) {
                    *v = classify_frame(S, &P->modules[k], ip, i);
                    break;
                }
            }
        }
        if (*v == AT_EVAL_LOOP)
            return 0;
        if (*v > 1)
            return (uint32_t)(*v - 1);
    }
    return 0;
}

/* The memo of an interned stack in the array by id; NULL when it has none there (inline, or sparse ids). */
static stack_memo_slot_t *memo_slot(sweeper_t *S, uint32_t proc, const pf_stack_view_t *st)
{
    const proc_state_t *P = &S->L->procs[proc];
    if (!st->stack_id || st->stack_id >= P->n_stack_at)
        return NULL;
    if (st->stack_id >= S->memo_n[proc]) {   /* first use, or a followed file's stacks indexed again */
        S->memo_at[proc] = pf_xrealloc(S->memo_at[proc], P->n_stack_at * sizeof **S->memo_at);
        memset(S->memo_at[proc] + S->memo_n[proc], 0, (P->n_stack_at - S->memo_n[proc]) * sizeof **S->memo_at);
        S->memo_n[proc] = P->n_stack_at;
    }
    return &S->memo_at[proc][st->stack_id];
}

uint64_t *pf_sweep_stack_memo_slow(sweeper_t *S, uint32_t proc, const pf_stack_view_t *st)
{
    stack_memo_slot_t *slot = memo_slot(S, proc, st);
    if (slot && !slot->used) {
        slot->used = 1;
        slot->flags = st->attribute_flags;
    }
    if (slot && slot->flags == st->attribute_flags)
        return &slot->value;
    return pf_map_put(&S->stack_memo, pf_sweep_key3(proc, (uintptr_t)st->py, st->attribute_flags), NULL);
}

uint32_t pf_sweep_stack_native_site(sweeper_t *S, uint32_t proc, const pf_stack_view_t *st)
{
    stack_memo_slot_t *slot = memo_slot(S, proc, st);
    if (!slot)
        return pf_sweep_native_site(S, proc, st->ips, st->n_native);
    if (!slot->native1)
        slot->native1 = pf_sweep_native_site(S, proc, st->ips, st->n_native) + 1;
    return slot->native1 - 1;
}
