/* pf_cli_int.h - the pyflow executable's parts: options, the launch of the profiled program, the EXIT
 * record, and the commands. */
#ifndef PF_CLI_INT_H
#define PF_CLI_INT_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "pf_out.h"
#include "pf_report.h"

typedef enum pf_target_kind { PF_TARGET_SCRIPT, PF_TARGET_MODULE, PF_TARGET_CODE } pf_target_kind_t;

typedef struct pf_run_opts {
    const char *python;         /* as given (--python, PYFLOW_PYTHON, the command line) or "python3" */
    int python_chosen;          /* 1: PYFLOW_PYTHON, 2: --python, 3: named before the script (its script is a
                                   path, as for python itself); 0: a command's #! line may pick it */
    char **python_opts;         /* the interpreter's own options (`pyflow run python3 -X dev app.py`) */
    int n_python_opts;
    const char *profile;        /* -o: keep the profile here; NULL = temporary */
    const char *json;           /* --json FILE */
    const char *dot;            /* --dot FILE (and FILE.svg when Graphviz is installed) */
    const char *html;           /* --html FILE */
    uint64_t dot_min_bytes;     /* --dot-min-bytes: smaller flows folded */
    int dot_all;                /* --dot-all: every flow, not the default view of the program's objects */
    int exact, native, no_report, max_lines, width;
    int aggregate;              /* --aggregate: per-site totals in snapshots (docs/long-runs.md) */
    uint64_t aggregate_after_ms;/* --aggregate-after: full records until then (0: from the start) */
    uint64_t aggregate_after_bytes; /* --aggregate-after-size: full records until the profile has so many bytes */
    int no_aggregate;           /* --no-aggregate: full records however large the profile grows */
    int help;                   /* -h/--help among the options: print the usage, run nothing */
    int reduced, profile_all;   /* report: only lines that matter; every file counts as the user's */
    const char *profile_only;   /* report: only files containing one of these comma-separated substrings */
    uint64_t sample_bytes, object_bytes;    /* 0 = runtime defaults */
    uint64_t max_profile_bytes;             /* 0 = the runtime's cap (4 GiB) */
    const char *watch;          /* --watch: "stores", "loads", "copies", "all" or a list; NULL = the default */
    int no_watch;               /* --no-watch: not even the default copy watches */
    const char *watch_event;    /* --event: libpfm4 name of the sampling event */
    uint64_t watch_period;      /* --period: events per sample; 0 = ~1 kHz */
    unsigned watch_budget;      /* --watch-budget: % of CPU time emulated watchpoints may step; 0 = default */
    int gpu_per_tensor;         /* --gpu-per-tensor: PyTorch allocates each tensor with cudaMallocAsync */
    pf_target_kind_t kind;
    const char *target;         /* script path, module name, or code */
    char **args;                /* the program's own arguments */
    int nargs;
    char command_path[4096];    /* a Python command found on PATH (`pyflow run pytest`): the script */
    char command_python[4096];  /* and the interpreter its #! line names */
} pf_run_opts_t;

/* Parses `pyflow run ...` arguments (argv[0] is "run"). Returns 0 (o->help set when -h/--help came before
 * the program), or 2 after printing a one-line message. */
int pf_cli_parse_run(int argc, char **argv, pf_run_opts_t *o);

/* Whether arg names an interpreter that exists (python3, /usr/bin/python3.11), not a script. */
int pf_cli_names_interpreter(const char *arg);

/* Reads Python's own options from argv[i] on, up to and including the program (script, -m MODULE or
 * -c CODE) they end with, into o. Returns the index of the program's first argument, or -1 after printing
 * why not. */
int pf_cli_take_python_options(pf_run_opts_t *o, int argc, char **argv, int i);

/* Checks the script before anything starts: a bare name that is not a file here but a Python command on
 * PATH becomes that file (run by the interpreter its #! line names, unless one was chosen); a compiled
 * program is refused. Returns 0, or -1 after printing why. */
int pf_cli_resolve_script(pf_run_opts_t *o);

/* 1 when the file at path is an ELF binary (a compiled program), else 0. */
int pf_cli_is_elf(const char *path);

/* Finds a command on PATH the way execlp would (a name with a slash is taken as it is). Returns 0 and the
 * path when it is executable, else -1. */
int pf_cli_find_on_path(const char *name, char *out, size_t size);

/* Parses a byte count with an optional k/m/g suffix. Returns 0 and sets *out, or -1. */
int pf_cli_parse_bytes(const char *s, uint64_t *out);

/* `pyflow env --output-dir DIR [--format shell|srun|json]` (argv[0] is "env"): prints the environment that
 * profiles a process pyflow did not start into DIR/<host>.<pid> (pf_cli_env.c). Returns the exit status. */
int pf_cli_env(int argc, char **argv);

typedef struct pf_python {
    int major, minor;
    char executable[4096];      /* what runs: the path as named, or as found on PATH (never resolved) */
} pf_python_t;

/* pf_probe.c: finds the interpreter as a shell would and learns its version (cached, privately). Returns
 * 0, or -1 after printing why it is not a usable Python. */
int pf_launch_probe(const char *python, pf_python_t *py);

/* Directory of the runtime (…/lib/pyflow) next to this executable. Returns 0 or -1. */
int pf_launch_libdir(char *out, size_t size);

typedef struct pf_child_status {
    int signaled;   /* 1: code is the signal number */
    int code;
    uint64_t elapsed_ns;
} pf_child_status_t;

/* The argv the program is started with (the interpreter, its options, the program and its arguments; the
 * strings are o's and py's). Free the array only. NULL when out of memory. */
char **pf_launch_argv(const pf_run_opts_t *o, const pf_python_t *py);

/* Starts the program under the runtime (profile NULL: without it) and waits for it. Returns 0 with *st
 * filled, or -1 after printing why it could not start. */
int pf_launch_run(const pf_run_opts_t *o, const pf_python_t *py, const char *libdir, const char *profile,
                  pf_child_status_t *st);

/* Appends the launcher's chunk with a PF_REC_EXIT record, the children still running (PF_REC_RUNNING: the n
 * pids of running; running NULL: not known, no record), the children's messages (PF_REC_NOTE; notes NULL:
 * none) and the whole argv (PF_REC_ARGV; NULL: none), to the profile the runtime wrote (fd: the launcher's
 * own descriptor of it, never reopened by name). Returns 0, 1 when the profile is empty (nothing to append
 * to), or -errno. */
#define PF_RUNNING_MAX 1024u    /* more still running: no PF_REC_RUNNING (the reader guesses, as before it) */
struct pf_notes;
int pf_trailer_append(int fd, const pf_child_status_t *st, const long *running, size_t n_running,
                      char *const *argv, const struct pf_notes *notes);

/* pf_cli_render.c: one rendering's destination: stdout ("-") or a file written through pf_out. */
typedef struct pf_target {
    int wanted, to_stdout;
    pf_out_t out;
} pf_target_t;

typedef enum pf_rendering { PF_R_JSON, PF_R_DOT, PF_R_HTML, PF_R_CSV, PF_R_SPEEDSCOPE, PF_R_PPROF } pf_rendering_t;

typedef struct pf_outputs {
    pf_load_opts_t load;            /* the user-code rule (children are always merged) */
    int text;                       /* the terminal report, to text_out */
    FILE *text_out;
    const pf_text_opts_t *topts;
    pf_target_t json, dot, html;
    double dot_min_bytes;
    int dot_all;                    /* every flow (--dot-all) */
    pf_target_t export_to;          /* an export for another tool (csv, speedscope, pprof) */
    pf_rendering_t export_kind;
    pf_follow_t *follow;            /* the profile's model, built while the program ran (NULL: load it) */
} pf_outputs_t;

/* Checks a rendering's destination before anything runs (path NULL: not wanted; "-": stdout; keep: a file
 * it must not replace). Returns 0, or -1 after printing why. */
int pf_cli_target_prepare(pf_target_t *t, const char *what, const char *path, const char *keep);
void pf_cli_target_release(pf_target_t *t);

/* Loads the profile (its children merged) and writes every wanted rendering. Returns 0, or -1 after
 * printing why (the renderings that could be written are). */
int pf_cli_render(const char *profile, pf_outputs_t *o);
/* The same for several profiles, or directories of them (pyflow env's), loaded as one job. */
int pf_cli_render_set(const char *const *profiles, size_t n_profiles, pf_outputs_t *o);

/* pf_cli_cuda.c: `pyflow info`'s CUDA line (driver and GPUs found, or why not). */
struct pf_probe;
void pf_cli_probe_cuda(struct pf_probe *p);

/* pf_cli_diff.c: `pyflow diff BASE NEW` (argv[0] is "diff"). Returns the exit status. */
int pf_cli_diff(int argc, char **argv);

#endif /* PF_CLI_INT_H */
