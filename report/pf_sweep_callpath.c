/* pf_sweep_callpath.c - the call-tree nodes of a stack (pf_calltree_int.h): the folded path of the user's
 * lines, and the unfolded one that keeps the library frames between and below them.
 *
 * Both are made together so every unfolded step knows the folded node it counts in: a user step its own,
 * a library step the one of the user's line above it (the line that called into the library). Library
 * frames above the first user line (a thread's bootstrap, runpy) fold away (-1): the folded tree starts at
 * the user's outermost line. Code without a real file (<frozen importlib._bootstrap>, <string>,
 * ...) is no step of either: nothing a user can open; but numpy 1.24's `<__array_function__ internals>`
 * wrapper is, in the unfolded path: it is the only frame naming a numpy function written in C
 * (np.concatenate), and it names it.
 */
#include "pf_calltree_int.h"
#include "pf_sweep_int.h"

/* The step of frame f (code pc); user steps are named as the folded path names them. */
static pf_callsite_t step_of(sweeper_t *S, uint32_t proc, const pf_rec_pyframe_t *f, const pcode_t *pc)
{
    return (pf_callsite_t){pc->file, pc->function, pf_sweep_frame_line(S, proc, f, pc),
                           pc->is_user ? PF_NODE_USER : PF_NODE_LIBRARY, -1};
}

static int same_line(const pf_callsite_t *a, const pf_callsite_t *b) { return a->file == b->file && a->line == b->line; }

/* One frame of a walk from the outermost (pf_sweep_stack_node): its steps appended to path (k) and full (nf),
 * if it makes any. */
static void walk_frame(sweeper_t *S, uint32_t proc, const pf_rec_pyframe_t *f, callpath_memo_t *W, size_t *k,
                       size_t *nf)
{
    const pcode_t *pc = pf_sweep_frame_code(S, proc, f);
    if (!pc)
        return;
    const char *file = S->m->strings[pc->file];
    int dispatch = pf_callpath_numpy_dispatch(file);
    if (file[0] == '<' && !dispatch)
        return;
    pf_callsite_t step = step_of(S, proc, f, pc);
    if (!pc->is_user || dispatch) {
        step.kind = PF_NODE_LIBRARY;
        if (!*nf || !same_line(&W->full[*nf - 1], &step))
            W->full[(*nf)++] = step;
        return;
    }
    /* a comprehension's frame on its caller's line is the caller's step: one step, not two */
    if (*k && same_line(&W->path[*k - 1], &step))
        return;
    W->user_at[*k] = *nf;
    W->path[(*k)++] = step;
    W->full[(*nf)++] = step;
}

int32_t pf_sweep_stack_node(sweeper_t *S, uint32_t proc, const pf_rec_pyframe_t *frames, uint16_t n, int32_t row)
{
    /* the callers' lines are not rows (a row is made only for what is charged to it) */
    callpath_memo_t *W = &S->callpath;
    size_t k = 0, nf = 0;
    uint32_t o = 0;     /* frames walked, outermost first: those the last walk shares are taken as they were */
    if (W->proc == proc)
        while (o < n && o < W->n && frames[n - 1 - o].code_id == W->frames[o].code_id &&
               frames[n - 1 - o].lasti_bytes == W->frames[o].lasti_bytes) {
            k = W->k_after[o];
            nf = W->nf_after[o];
            o++;
        }
    W->proc = proc;
    /* o bounded too: frames that add no step (a comprehension on its caller's line) leave k and nf behind,
     * and a corrupt STACK may claim more frames than the runtime ever captures */
    for (; o < n && o < PF_MAX_PY_FRAMES && k < PF_MAX_PY_FRAMES && nf < PF_MAX_PY_FRAMES; o++) {
        W->frames[o] = frames[n - 1 - o];
        walk_frame(S, proc, &frames[n - 1 - o], W, &k, &nf);
        W->k_after[o] = (uint8_t)k;
        W->nf_after[o] = (uint8_t)nf;
    }
    W->n = o;
    /* what follows changes the last steps: on copies, the memo keeps the walk's own */
    pf_callsite_t path[PF_MAX_PY_FRAMES + 1], full[PF_MAX_PY_FRAMES + 1];
    size_t user_at[PF_MAX_PY_FRAMES + 1];   /* where each folded step sits in full */
    memcpy(path, W->path, k * sizeof *path);
    memcpy(full, W->full, nf * sizeof *full);
    memcpy(user_at, W->user_at, k * sizeof *user_at);
    const pf_line_t *l = &S->m->lines[row];
    pf_callsite_t last = {l->file, l->function, l->line, PF_NODE_USER, -1};
    if (k && same_line(&path[k - 1], &last)) {
        full[user_at[k - 1]] = last;    /* the row's own name for the last step */
        path[k - 1] = last;
    } else if (k) {                     /* a row below the last user line (generated code): it ends the path */
        nf = user_at[k - 1] + 1;
        user_at[k] = nf;
        full[nf++] = last;
        path[k++] = last;
    } else {                            /* no user line: the row is a root of the folded tree */
        if (!nf || !same_line(&full[nf - 1], &last)) {
            nf = 0;                     /* a bracketed row, or one no frame names: a root here too */
            full[nf++] = last;
        }                               /* else a library row under the library frames that called it */
        user_at[0] = nf - 1;
        path[k++] = last;
    }
    int32_t folded = pf_calltree_node(S->m, &S->node_index, &S->node_memo, path, k);
    /* each folded step's node, innermost first up the folded path; each library step below one counts in it */
    for (size_t j = k; j-- > 0; folded = S->m->nodes[folded].parent)
        full[user_at[j]].folded = folded;
    int32_t cur = -1;
    for (size_t i = 0, j = 0; i < nf; i++) {
        if (j < k && i == user_at[j])
            cur = full[i].folded, j++;
        else
            full[i].folded = cur;
    }
    return pf_calltree_full_node(S->m, &S->full_index, &S->full_memo, full, nf);
}
