/* pf_labels.c - what a distributed engine calls this process, for the reporter to name each worker.
 *
 * Engines tell a process who it is through its environment at start: torchrun sets RANK, LOCAL_RANK,
 * WORLD_SIZE and GROUP_RANK, Slurm SLURM_PROCID/SLURM_LOCALID/SLURM_NTASKS/SLURM_NODEID, MPI launchers
 * OMPI_COMM_WORLD_RANK or PMI_RANK. Reading them once at start costs nothing while the program runs; a Dask
 * worker, which its nanny starts with no such variable, is recognised by the reporter from its threads'
 * names instead. The labels go into each profile file (a fork child's too) as PF_MARK_PROCESS_LABEL notes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pf_labels.h"
#include "pf_runtime.h"

#define MAX_LABELS 8

static char host[64] = "localhost";
static char labels[MAX_LABELS][96];
static unsigned n_labels;
static unsigned written_gen;    /* generation + 1 whose file has the labels */

/* The first of a label's variables that is set, in order of preference. */
typedef struct source {
    const char *key;
    const char *vars[4];
} source_t;

static const source_t sources[] = {
    {"rank", {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}},
    {"local_rank", {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", NULL}},
    {"world_size", {"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}},
    {"node", {"GROUP_RANK", "SLURM_NODEID", NULL, NULL}},
    {"job", {"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", NULL, NULL}},
};

/* Keeps letters, digits, '-', '_' and '.': the name goes into file names and "key=value" notes. */
static void clean_copy(char *dst, size_t size, const char *src)
{
    size_t n = 0;
    for (; *src && n + 1 < size; src++) {
        char c = *src;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                 c == '_' || c == '.';
        dst[n++] = ok ? c : '_';
    }
    dst[n] = '\0';
}

void pf_labels_init(void)
{
    const char *h = getenv(PF_ENV_HOST);
    char name[64] = "";
    if (h && *h)
        snprintf(name, sizeof name, "%s", h);
    else if (gethostname(name, sizeof name - 1) != 0)
        name[0] = '\0';
    if (name[0])
        clean_copy(host, sizeof host, name);
    n_labels = 0;
    snprintf(labels[n_labels++], sizeof labels[0], "host=%s", host);
    for (size_t i = 0; i < sizeof sources / sizeof *sources && n_labels < MAX_LABELS; i++)
        for (int v = 0; v < 4 && sources[i].vars[v]; v++) {
            const char *value = getenv(sources[i].vars[v]);
            if (value && *value) {
                char clean[64];
                clean_copy(clean, sizeof clean, value);
                snprintf(labels[n_labels++], sizeof labels[0], "%s=%s", sources[i].key, clean);
                break;
            }
        }
}

const char *pf_labels_host(void)
{
    return host;
}

void pf_labels_write(pf_tls_t *t, unsigned gen)
{
    unsigned want = gen + 1, seen = __atomic_load_n(&written_gen, __ATOMIC_RELAXED);
    if (seen == want || !__atomic_compare_exchange_n(&written_gen, &seen, want, 0, __ATOMIC_RELAXED,
                                                     __ATOMIC_RELAXED))
        return;     /* this file has them, or another thread is writing them */
    for (unsigned i = 0; i < n_labels; i++)
        pf_record_mark(t, PF_MARK_PROCESS_LABEL, 0, labels[i]);
}
