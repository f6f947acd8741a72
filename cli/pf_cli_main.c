/* pf_cli_main.c - the `pyflow` command: run, report, info.
 *
 * `pyflow run` checks what it can before the program starts (the interpreter, the script, the output
 * paths: one clear line and exit 2 on a problem), runs the program, then renders the report to stderr
 * (stdout stays the program's) and ends with the program's own exit status, re-raising its signal if it
 * died of one.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pf_cli_int.h"
#include "pf_jobs.h"
#include "pf_notes.h"
#include "pf_report.h"
#include "pf_runtime.h"
#include "pf_watch.h"
#include "pf_workdir.h"

#define PYFLOW_VERSION "0.1.0"

static const char *usage_text =
    "usage: pyflow run [options] app.py [args...]\n"
    "       pyflow run [options] -m module [args...]\n"
    "       pyflow run [options] -c CODE [args...]\n"
    "       pyflow run [options] python3.X [python options] app.py|-m module|-c CODE [args...]\n"
    "       pyflow run [options] COMMAND [args...]   (a Python program on PATH: pytest, ...)\n"
    "       pyflow report PROFILE|DIR... [--format text|json|dot|html|csv|speedscope|pprof] [-o FILE]\n"
    "                     [--max-lines N] [--width N] [--reduced] [--profile-only PAT] [--profile-all]\n"
    "                     [--dot-all] [--window FROM_NS:TO_NS]\n"
    "       pyflow diff BASE NEW [--fail-on COND[,COND]]... [--format text|html] [-o FILE] [--html FILE]\n"
    "                   (two profiles or JSON reports; COND e.g. peak:+10%, leaked:+1MB, redundant:+0)\n"
    "       pyflow env --output-dir DIR [--format shell|srun|json] [--sample-bytes N] [--exact] [--native]\n"
    "                     (the environment that profiles processes pyflow did not start; docs/distributed.md)\n"
    "       pyflow info\n"
    "\n"
    "run options (they come before the script; what follows it is the program's):\n"
    "  --python PATH       interpreter to run (default: $PYFLOW_PYTHON, else the one named after the\n"
    "                      options, else a COMMAND's #! interpreter, else python3 on PATH)\n"
    "  -o, --output FILE   keep the binary profile in FILE (default: a temporary file, removed)\n"
    "  --json FILE         also write the JSON rendering to FILE\n"
    "  --html FILE         also write one self-contained HTML page (sortable tables, timeline, flow graph)\n"
    "  --dot FILE          also write the object flow graph (Graphviz; FILE.svg too if `dot` is installed)\n"
    "  --dot-min-bytes N   leave flows smaller than N out of the graph (default 64k)\n"
    "  --dot-all           draw every flow: untracked ends and import-time traffic too, not only the\n"
    "                      largest flows between your program's objects and every wasteful one\n"
    "  --exact             record every allocation (slower; for tests and small programs)\n"
    "  --aggregate         long runs: keep per-site and per-flow totals, write a snapshot a second (a few MB\n"
    "                      an hour; no waste or sampling error; docs/long-runs.md)\n"
    "  --aggregate-after D record in full for the run's first D (like 90s, 10m, 2h), then aggregate\n"
    "  --aggregate-after-size SIZE  ... until the profile has SIZE bytes (like 500m); a plain run does this\n"
    "                      at 192m, so that no profile grows past it by more than a few MB an hour\n"
    "  --no-aggregate      full records however large the profile grows (up to --max-profile's cap)\n"
    "  --sample-bytes N    mean sampling interval in bytes (default 256k; suffixes k, m, g)\n"
    "  --max-profile SIZE  the profile file's size cap (default and most 4g): as it nears it, sampling\n"
    "                      coarsens (the report says from when) instead of records being lost\n"
    "  --object-bytes N    allocations of N bytes or more are recorded exactly (default 1m)\n"
    "  --native            also capture native call stacks (libunwind)\n"
    "  --watch[=MODES]     find redundant stores/loads with PMU samples + watchpoints, and writes that prove a\n"
    "                      copy was needed; MODES: stores (default), loads, copies, all, or a comma list\n"
    "                      (see `pyflow info` for what this machine offers). Without it, copies are\n"
    "                      watched where debug registers fire (`pyflow info`: breakpoints fire ok)\n"
    "  --no-watch          no watchpoints at all, not even those default copy watches\n"
    "  --period N          watch: events between samples (default: about 250 samples a CPU-second)\n"
    "  --watch-budget PCT  watch, where watchpoints are emulated by single steps (`pyflow info`): the\n"
    "                      largest share of CPU time they may take (default 10, 20 for loads alone; 100:\n"
    "                      no cap, most findings)\n"
    "  --event NAME        watch: sampling event, a libpfm4 name (default: PEBS/IBS where they pass a\n"
    "                      self-test, else cycles, else task-clock); page-faults and ibs_op carry addresses\n"
    "  --gpu-per-tensor    PyTorch: allocate each tensor with cudaMallocAsync (its `backend:cudaMallocAsync`),\n"
    "                      so GPU bytes are charged per tensor, not per cache reservation\n"
    "  --max-lines N       rows in the per-line table (default 15)\n"
    "  --width N           report width in columns (default: the terminal's, else 100)\n"
    "  --no-report         do not print the report (use with -o or --json)\n"
    "  --reduced           only lines with at least 1% of the allocated bytes, the peak or the copies\n"
    "  --profile-only PAT  only files whose path contains PAT (comma-separated) count as your code\n"
    "  --profile-all       every file counts as your code (the standard library and packages too)\n"
    "\n"
    "The report goes to stderr; the program's stdout, stdin and exit status are its own.\n";

static void usage(FILE *f)
{
    fputs(usage_text, f);
}

static int terminal_width(int requested)
{
    if (requested > 0)
        return requested;
    struct winsize ws;
    if (isatty(STDERR_FILENO) && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
        return ws.ws_col;
    const char *cols = getenv("COLUMNS");
    if (cols && atoi(cols) >= 40)
        return atoi(cols);
    return 100;
}

static int want_color(void)
{
    const char *nc = getenv("NO_COLOR");
    return isatty(STDERR_FILENO) && !(nc && *nc);
}

static int check_script(const pf_run_opts_t *o)
{
    if (o->kind != PF_TARGET_SCRIPT || strcmp(o->target, "-") == 0)
        return 0;
    struct stat st;
    if (stat(o->target, &st) != 0) {
        fprintf(stderr, "pyflow: can't open file '%s': %s\n", o->target, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        char main_py[PATH_MAX];
        snprintf(main_py, sizeof main_py, "%s/__main__.py", o->target);
        if (access(main_py, R_OK) != 0) {
            fprintf(stderr, "pyflow: %s is a directory without a __main__.py\n", o->target);
            return -1;
        }
    }
    return 0;
}

static int supported_minor(const char *libdir, int minor)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/pf_pyframes_3%d.so", libdir, minor);
    return access(path, R_OK) == 0;
}

static void list_supported(const char *libdir, char *out, size_t size)
{
    out[0] = '\0';
    for (int m = PF_PY_MINOR_FIRST; m <= PF_PY_MINOR_LAST; m++) {
        if (!supported_minor(libdir, m))
            continue;
        size_t used = strlen(out);
        snprintf(out + used, size - used, "%s3.%d", used ? ", " : "", m);
    }
    if (!out[0])
        snprintf(out, size, "none (rebuild with python3-dev installed)");
}

/* Ends pyflow the way the program ended: its exit code, or death by its signal. */
static int finish_like(const pf_child_status_t *st)
{
    if (!st->signaled)
        return st->code;
    fflush(NULL);
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);   /* the program already dumped (or not) its own core */
    signal(st->code, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, st->code);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    kill(getpid(), st->code);
    return 128 + st->code;
}

/* The run's private directory: beside the -o profile (same file system, so it is moved into place by a
 * rename; a device or FIFO output gets a copy instead), else in $TMPDIR. Returns 0, or -1 after printing
 * why (then the program runs unprofiled). */
static int make_workdir(pf_workdir_t *wd, const pf_out_t *saved)
{
    char parent[PATH_MAX], prefix[300];
    int fd;
    if (saved && !saved->in_place) {
        const char *slash = strrchr(saved->path, '/');
        snprintf(parent, sizeof parent, "%.*s", slash ? (int)(slash - saved->path) + (slash == saved->path) : 1,
                 slash ? saved->path : ".");
        snprintf(prefix, sizeof prefix, ".%.200s.pyflow-", saved->name);
        fd = dup(saved->dirfd);
    } else {
        const char *t = getenv("TMPDIR");
        snprintf(parent, sizeof parent, "%s", t && *t ? t : "/tmp");
        snprintf(prefix, sizeof prefix, "pyflow-");
        fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    int rc = fd < 0 ? -errno : pf_workdir_make(wd, fd, parent, prefix);
    if (rc == 0)
        return 0;
    if (saved && !saved->in_place)
        fprintf(stderr, "pyflow: cannot write the profile beside %s: %s; running the program without profiling\n",
                saved->path, strerror(-rc));
    else
        /* Nowhere to put the profile: the program still runs, as the user asked, just unprofiled. */
        fprintf(stderr, "pyflow: cannot create a temporary directory for the profile (%s/%sXXXXXX): %s; running "
                "the program without profiling (set TMPDIR, or use -o FILE)\n", parent, prefix, strerror(-rc));
    return -1;
}

/* With --exact and a report at exit, the profile's model is built while the program runs, on a thread of
 * the launcher (pf_follow_start), where the program leaves a CPU to it: the report then has only the
 * profile's last chunks to read. PYFLOW_REPORT_FOLLOW=0 in pyflow's environment loads the profile after
 * the run, as without --exact (comparisons, tests); =1 follows on one CPU too. */
/* 1 when `pyflow run` renders anything at exit (else the profile is all that was asked for). */
static int report_wanted(const pf_outputs_t *out)
{
    return out->text || out->json.wanted || out->dot.wanted || out->html.wanted;
}

static pf_follow_t *follow_profile(const pf_run_opts_t *o, const pf_outputs_t *out, const char *profile)
{
    const char *env = getenv("PYFLOW_REPORT_FOLLOW");
    if (!o->exact || !report_wanted(out) || (env && strcmp(env, "0") == 0))
        return NULL;
    cpu_set_t set;
    if (!(env && strcmp(env, "1") == 0) && sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) < 2)
        return NULL;
    pf_load_opts_t lo = out->load;
    lo.merge_children = 1;
    return pf_follow_start(profile, &lo);
}

/* Processes the program started that outlive it (multiprocessing's forkserver and resource tracker end a few
 * milliseconds after it; a child importing torch takes seconds) are waited for while they work, until they
 * have used no CPU for this long, and at most PF_CHILDREN_MOST_MS: the report then reads their finished
 * files. A server the program leaves running idle costs the run this long. */
#define PF_CHILDREN_GRACE_MS 1000u
#define PF_CHILDREN_MOST_MS 30000u
#define PF_RUNNING_NAMED 8

static unsigned children_grace_ms(void)
{
    const char *v = getenv("PYFLOW_CHILDREN_GRACE_MS");     /* tests */
    char *end;
    unsigned long ms = v && *v ? strtoul(v, &end, 10) : PF_CHILDREN_GRACE_MS;
    return v && *v && (*end || ms > 600000) ? PF_CHILDREN_GRACE_MS : (unsigned)ms;
}

/* Those still running after the wait: the report has what they recorded until then. */
static void note_still_running(pf_notes_t *notes, const long *pids, size_t n)
{
    char line[256];
    for (size_t i = 0; i < n && i < PF_RUNNING_NAMED; i++) {
        char comm[32] = "?", path[64];
        snprintf(path, sizeof path, "/proc/%ld/comm", pids[i]);
        FILE *f = fopen(path, "re");
        if (f) {
            if (fgets(comm, sizeof comm, f))
                comm[strcspn(comm, "\n")] = '\0';
            fclose(f);
        }
        snprintf(line, sizeof line, "child process %ld (%s): still running when the report was made (it outlived "
                 "the program); the report has what it recorded until then", pids[i], comm);
        pf_notes_add(notes, line);
    }
    if (n > PF_RUNNING_NAMED) {
        snprintf(line, sizeof line, "... and %zu more child processes still running", n - PF_RUNNING_NAMED);
        pf_notes_add(notes, line);
    }
}

static int cmd_run(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return 0;
    }
    pf_run_opts_t o;
    int rc = pf_cli_parse_run(argc, argv, &o);
    if (rc)
        return rc;
    if (o.help) {
        usage(stdout);
        return 0;
    }
    char libdir[PATH_MAX];
    if (pf_launch_libdir(libdir, sizeof libdir) != 0) {
        fprintf(stderr, "pyflow: cannot find where pyflow is installed (/proc/self/exe unreadable)\n");
        return 2;
    }
    char runtime[PATH_MAX + 32];
    snprintf(runtime, sizeof runtime, "%s/%s", libdir, PF_RUNTIME_SONAME);
    if (access(runtime, R_OK) != 0) {
        fprintf(stderr, "pyflow: the runtime %s is missing: reinstall pyflow\n", runtime);
        return 2;
    }
    if (pf_cli_resolve_script(&o) != 0 || check_script(&o) != 0)
        return 2;
    pf_python_t py;
    if (pf_launch_probe(o.python, &py) != 0)
        return 2;
    if (py.major != 3 || !supported_minor(libdir, py.minor)) {
        char list[128];
        list_supported(libdir, list, sizeof list);
        fprintf(stderr, "pyflow: Python %d.%d is not supported (supported here: %s)\n", py.major, py.minor, list);
        return 2;
    }
    /* every output is checked before the program starts; none is written until it has ended */
    const char *script = o.kind == PF_TARGET_SCRIPT && strcmp(o.target, "-") != 0 ? o.target : NULL;
    pf_outputs_t out = {.load = {.profile_only = o.profile_only, .profile_all = o.profile_all},
                        .text = !o.no_report, .text_out = stderr,
                        .dot_min_bytes = o.dot_min_bytes ? (double)o.dot_min_bytes : 65536.0,
                        .dot_all = o.dot_all};
    pf_out_t saved = {.dirfd = -1};
    if (pf_cli_target_prepare(&out.json, "JSON report", o.json, script) != 0 ||
        pf_cli_target_prepare(&out.dot, "flow graph", o.dot, script) != 0 ||
        pf_cli_target_prepare(&out.html, "HTML report", o.html, script) != 0 ||
        (o.profile && pf_out_prepare(&saved, "profile", o.profile, script, 1) != 0))
        return 2;
    pf_workdir_t wd;
    if (make_workdir(&wd, o.profile ? &saved : NULL) != 0) {
        pf_child_status_t st;
        if (pf_launch_run(&o, &py, libdir, NULL, &st) != 0)
            return 2;
        return finish_like(&st);
    }

    pf_child_status_t st;
    char run_id[32];
    unsigned long long id = pf_out_random() | 1;
    snprintf(run_id, sizeof run_id, "%llx", id);
    setenv(PF_ENV_RUN_ID, run_id, 1);
    int notes_fd = pf_notes_open(id);
    pf_jobs_also_watch(pf_workdir_watch(&wd), pf_workdir_hold_new, &wd);
    pf_follow_t *follow = follow_profile(&o, &out, wd.profile);
    int launched = pf_launch_run(&o, &py, libdir, wd.profile, &st);
    unsetenv(PF_ENV_RUN_ID);
    long running[PF_RUNNING_MAX];
    unsigned grace = children_grace_ms();
    size_t n_running = launched == 0 ? pf_workdir_wait_children(&wd, grace, grace > PF_CHILDREN_MOST_MS ? grace :
                                                                PF_CHILDREN_MOST_MS, running, PF_RUNNING_MAX) : 0;
    pf_notes_t notes;
    pf_notes_collect(notes_fd, &notes);
    note_still_running(&notes, running, n_running);
    if (launched != 0) {
        pf_follow_free(follow);
        pf_notes_print(&notes, stderr);
        pf_notes_free(&notes);
        pf_workdir_remove(&wd);
        return 2;
    }
    /* From here pyflow only writes: a reader of its stderr that went away (`| head`) must not cost the
     * files, nor leave the work directory behind. */
    signal(SIGPIPE, SIG_IGN);
    char followed[sizeof wd.profile];
    snprintf(followed, sizeof followed, "%s", wd.profile);
    if (pf_workdir_recover(&wd) != 0) {
        pf_follow_free(follow);
        pf_notes_print(&notes, stderr);
        pf_notes_free(&notes);
        pf_workdir_remove(&wd);
        return finish_like(&st);
    }
    char **argv_run = pf_launch_argv(&o, &py);
    int appended = pf_trailer_append(wd.profile_fd, &st, running, n_running, argv_run, &notes), keep = 0, notes_shown = 0;
    free(argv_run);
    if (appended < 0)
        fprintf(stderr, "pyflow: could not finish the profile (%s): the report may miss the exit status\n",
                strerror(-appended));
    if (appended == 1) {
        fprintf(stderr, "pyflow: no profile was recorded: the program did not start under pyflow's runtime\n");
    } else {
        pf_text_opts_t topts = {.max_lines = o.max_lines, .width = terminal_width(o.width), .color = want_color(),
                                .profile_path = o.profile, .reduced = o.reduced};
        out.topts = &topts;
        /* --no-report and no other rendering: the profile is all that was asked for, and loading a big one
         * costs seconds and about twice its size in memory */
        int wanted = report_wanted(&out);
        if (wanted && strcmp(followed, wd.profile) == 0) {
            out.follow = follow;    /* the profile is the one it followed (not a copy the launcher made) */
            follow = NULL;
        }
        int rendered = wanted && pf_cli_render(wd.profile, &out) == 0;
        if (wanted && !rendered && !o.no_report)
            fprintf(stderr, "pyflow: the report could not be produced (see above)\n");
        notes_shown = rendered && appended == 0 && out.text;   /* the text report named them, from the profile */
        if (o.profile && pf_workdir_publish(&wd, &saved) != 0)
            keep = 1;   /* what could not be moved stays where the message said */
    }
    pf_follow_free(follow);
    pf_follow_free(out.follow);
    if (!notes_shown)
        pf_notes_print(&notes, stderr);
    pf_notes_free(&notes);
    if (keep)
        pf_workdir_release(&wd);
    else
        pf_workdir_remove(&wd);
    pf_out_release(&saved);
    pf_cli_target_release(&out.json);
    pf_cli_target_release(&out.dot);
    pf_cli_target_release(&out.html);
    return finish_like(&st);
}

static int cmd_report(int argc, char **argv)
{
    const char *profile = NULL, *format = "text", *out = NULL;
    const char *profiles[argc];    /* files and directories of one job */
    size_t n_profiles = 0;
    pf_text_opts_t topts = {0};
    pf_load_opts_t load = {0};
    int dot_all = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int valued = strcmp(a, "--format") == 0 || strcmp(a, "-f") == 0 || strcmp(a, "-o") == 0 ||
                     strcmp(a, "--max-lines") == 0 || strcmp(a, "--width") == 0 || strcmp(a, "--profile-only") == 0 ||
                     strcmp(a, "--window") == 0;
        if (valued && i + 1 >= argc) {
            fprintf(stderr, "pyflow: %s needs a value (see `pyflow --help`)\n", a);
            return 2;
        }
        if ((strcmp(a, "--max-lines") == 0 || strcmp(a, "--width") == 0) && atoi(argv[i + 1]) <= 0) {
            fprintf(stderr, "pyflow: %s needs a positive number, not %s\n", a, argv[i + 1]);
            return 2;
        }
        if ((strcmp(a, "--format") == 0 || strcmp(a, "-f") == 0) && i + 1 < argc)
            format = argv[++i];
        else if (strncmp(a, "--format=", 9) == 0)
            format = a + 9;
        else if (strcmp(a, "-o") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (strcmp(a, "--max-lines") == 0 && i + 1 < argc)
            topts.max_lines = atoi(argv[++i]);
        else if (strcmp(a, "--width") == 0 && i + 1 < argc)
            topts.width = atoi(argv[++i]);
        else if (strcmp(a, "--reduced") == 0)
            topts.reduced = 1;
        else if (strcmp(a, "--dot-all") == 0)
            dot_all = 1;
        else if (strcmp(a, "--profile-only") == 0 && i + 1 < argc)
            load.profile_only = argv[++i];
        else if (strcmp(a, "--profile-all") == 0)
            load.profile_all = 1;
        else if (strcmp(a, "--window") == 0 && i + 1 < argc) {
            /* FROM:TO in ns of the profile's clock: what the pytest plugin asks about one test */
            unsigned long long from, to;
            char end;
            if (sscanf(argv[++i], "%llu:%llu%c", &from, &to, &end) != 2 || to == 0 || from > to) {
                fprintf(stderr, "pyflow: --window needs FROM_NS:TO_NS (0 < TO, FROM <= TO), not %s\n", argv[i]);
                return 2;
            }
            load.window_from_ns = from;
            load.window_to_ns = to;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "pyflow: unknown option %s (see `pyflow --help`)\n", a);
            return 2;
        } else {
            if (!profile)
                profile = a;
            profiles[n_profiles++] = a;
        }
    }
    if (!profile) {
        fprintf(stderr, "pyflow: report needs a profile file (see `pyflow --help`)\n");
        return 2;
    }
    int json = strcmp(format, "json") == 0, dot = strcmp(format, "dot") == 0, html = strcmp(format, "html") == 0;
    static const struct {
        const char *name;
        pf_rendering_t kind;
    } exports[] = {{"csv", PF_R_CSV}, {"speedscope", PF_R_SPEEDSCOPE}, {"pprof", PF_R_PPROF}};
    for (size_t i = 0; i < sizeof exports / sizeof *exports; i++)
        if (strcmp(format, exports[i].name) == 0) {
            if (exports[i].kind == PF_R_PPROF && !out && isatty(STDOUT_FILENO)) {
                fprintf(stderr, "pyflow: the pprof export is gzipped binary: give -o FILE (or redirect stdout)\n");
                return 2;
            }
            pf_outputs_t o = {.load = load, .export_kind = exports[i].kind};
            if (pf_cli_target_prepare(&o.export_to, exports[i].name, out ? out : "-", profile) != 0)
                return 2;
            int rc = pf_cli_render_set(profiles, n_profiles, &o);
            pf_cli_target_release(&o.export_to);
            return rc == 0 ? 0 : 2;
        }
    if (!json && !dot && !html && strcmp(format, "text") != 0) {
        fprintf(stderr, "pyflow: unknown format %s (text, json, dot, html, csv, speedscope or pprof)\n", format);
        return 2;
    }
    pf_outputs_t o = {.load = load, .dot_min_bytes = 65536.0, .dot_all = dot_all};
    const char *dest = out ? out : "-";
    pf_target_t text;
    if (pf_cli_target_prepare(json ? &o.json : dot ? &o.dot : html ? &o.html : &text,
                              json ? "JSON report" : dot ? "flow graph" : html ? "HTML report" : "report", dest,
                              profile) != 0)
        return 2;
    int rc;
    if (json || dot || html) {
        rc = pf_cli_render_set(profiles, n_profiles, &o);
        pf_cli_target_release(json ? &o.json : dot ? &o.dot : &o.html);
        return rc == 0 ? 0 : 2;
    }
    FILE *f = text.to_stdout ? stdout : pf_out_fopen(&text.out);
    if (!f) {
        pf_cli_target_release(&text);
        return 2;
    }
    topts.width = out ? (topts.width ? topts.width : 100) : terminal_width(topts.width);
    topts.color = !out && isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
    o.text = 1;
    o.text_out = f;
    o.topts = &topts;
    rc = pf_cli_render_set(profiles, n_profiles, &o);
    if (!text.to_stdout && pf_out_fcommit(&text.out, f, rc == 0) != 0)
        rc = -1;
    pf_cli_target_release(&text);
    return rc == 0 ? 0 : 2;
}

static int cmd_info(void)
{
    char libdir[PATH_MAX], list[128];
    if (pf_launch_libdir(libdir, sizeof libdir) != 0)
        snprintf(libdir, sizeof libdir, "(unknown)");
    list_supported(libdir, list, sizeof list);
    printf("pyflow %s\n", PYFLOW_VERSION);
    printf("%-20s %s/%s\n", "runtime", libdir, PF_RUNTIME_SONAME);
    printf("%-20s %s\n", "python versions", list);
    pf_probe_t probes[17];
    size_t n = pf_watch_probe(probes, 16);
    pf_cli_probe_cuda(&probes[n++]);
    static const char *status[] = {"ok", "skip", "FAIL"};
    for (size_t i = 0; i < n; i++)
        printf("%-20s %-4s %s\n", probes[i].name, status[probes[i].status], probes[i].detail);
    return 0;
}

int main(int argc, char **argv)
{
    argv = pf_jobs_keep_argv(argc, argv);
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("pyflow %s\n", PYFLOW_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    if (strcmp(argv[1], "report") == 0)
        return cmd_report(argc - 1, argv + 1);
    if (strcmp(argv[1], "info") == 0)
        return cmd_info();
    if (strcmp(argv[1], "diff") == 0)
        return pf_cli_diff(argc - 1, argv + 1);
    if (strcmp(argv[1], "env") == 0)
        return pf_cli_env(argc - 1, argv + 1);
    fprintf(stderr, "pyflow: unknown command %s (run, report, diff, env or info; see `pyflow --help`)\n", argv[1]);
    return 2;
}
