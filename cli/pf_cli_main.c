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
#include "pf_report.h"
#include "pf_runtime.h"
#include "pf_watch.h"

#define PYFLOW_VERSION "0.1.0"

static const char *usage_text =
    "usage: pyflow run [options] app.py [args...]\n"
    "       pyflow run [options] -m module [args...]\n"
    "       pyflow run [options] -c CODE [args...]\n"
    "       pyflow run [options] python3.X [python options] app.py|-m module|-c CODE [args...]\n"
    "       pyflow run [options] COMMAND [args...]   (a Python program on PATH: pytest, ...)\n"
    "       pyflow report PROFILE|DIR... [--format text|json|dot|html] [-o FILE] [--max-lines N] [--width N]\n"
    "                     [--reduced] [--profile-only PAT] [--profile-all] [--dot-all]\n"
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

/* Checks that path can be written (creating it if needed). Returns 0, or -1 after saying why. */
static int check_writable(const char *what, const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "pyflow: cannot write the %s to %s: %s\n", what, path, strerror(errno));
        return -1;
    }
    close(fd);
    return 0;
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

/* Removes PATH.<pid>[.<n>] files left by an earlier run with the same -o, so they are not merged. */
static void remove_children(const char *path)
{
    char **kids;
    size_t n = pf_profile_children(path, &kids);
    for (size_t i = 0; i < n; i++)
        unlink(kids[i]);
    pf_profile_children_free(kids, n);
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

typedef struct outputs {
    pf_load_opts_t load;            /* merge children, the user-code rule */
    int text;                       /* the terminal report, to text_out */
    FILE *text_out;
    const pf_text_opts_t *topts;
    const char *json;               /* file or "-" */
    const char *dot;                /* file or "-" */
    const char *html;               /* file or "-" */
    double dot_min_bytes;
    int dot_all;                    /* every flow (--dot-all) */
} outputs_t;

typedef enum rendering { R_JSON, R_DOT, R_HTML } rendering_t;

/* Runs Graphviz on a .dot file when it is installed; says why not otherwise (once, on stderr). */
static void dot_to_svg(const char *dot)
{
    char svg[PATH_MAX + 8];
    snprintf(svg, sizeof svg, "%s.svg", dot);
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, STDERR_FILENO);
        execlp("dot", "dot", "-Tsvg", dot, "-o", svg, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "pyflow: %s written; no SVG (Graphviz's `dot` is %s)\n", dot,
                pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 127 ? "not installed" : "failing");
}

/* The flow graph as SVG text, through Graphviz (NULL when it is not installed). Caller frees. */
static char *flow_graph_svg(const pf_model_t *model, const pf_dot_opts_t *dopts)
{
    char dir[] = "/tmp/pyflow-svg-XXXXXX", dot[64], svg[80];
    if (!mkdtemp(dir))
        return NULL;
    snprintf(dot, sizeof dot, "%s/g.dot", dir);
    snprintf(svg, sizeof svg, "%s/g.svg", dir);
    char *text = NULL;
    FILE *f = fopen(dot, "w");
    if (f && pf_render_dot(model, f, dopts) == 0 && fclose(f) == 0) {
        f = NULL;
        pid_t pid = fork();
        if (pid == 0) {
            int devnull = open("/dev/null", O_WRONLY);
            if (devnull >= 0)
                dup2(devnull, STDERR_FILENO);
            execlp("dot", "dot", "-Tsvg", dot, "-o", svg, (char *)NULL);
            _exit(127);
        }
        int status;
        if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            FILE *in = fopen(svg, "r");
            if (in) {
                size_t cap = 1 << 16, len = 0, n;
                text = malloc(cap);
                while (text && (n = fread(text + len, 1, cap - len - 1, in)) > 0) {
                    len += n;
                    if (len + 1 == cap) {
                        char *bigger = realloc(text, cap *= 2);
                        if (!bigger) {
                            free(text);
                            text = NULL;
                        } else
                            text = bigger;
                    }
                }
                if (text)
                    text[len] = '\0';
                fclose(in);
            }
        }
    }
    if (f)
        fclose(f);
    unlink(dot);
    unlink(svg);
    rmdir(dir);
    return text;
}

/* Writes one rendering to path ("-" = stdout). Returns 0 or -1 after saying why. */
static int write_rendering(const pf_model_t *model, const char *path, const outputs_t *o, rendering_t kind)
{
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (!f) {
        fprintf(stderr, "pyflow: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    pf_dot_opts_t dopts = {.min_bytes = o->dot_min_bytes, .all = o->dot_all};
    int rc;
    if (kind == R_DOT) {
        rc = pf_render_dot(model, f, &dopts);
    } else if (kind == R_HTML) {
        pf_html_opts_t hopts = {.flow_svg = flow_graph_svg(model, &dopts)};
        rc = pf_render_html(model, f, &hopts);
        free((char *)hopts.flow_svg);
    } else {
        rc = pf_render_json(model, f);
    }
    if (f != stdout && fclose(f) != 0)
        rc = -1;
    if (rc < 0)
        fprintf(stderr, "pyflow: writing %s failed\n", path);
    else if (kind == R_DOT && f != stdout)
        dot_to_svg(path);
    return rc < 0 ? -1 : 0;
}

static int is_directory(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Several profiles, or a directory of them (pyflow env's), load as one job (pf_model_load_set). */
static int render_set(const char *const *profiles, size_t n_profiles, const outputs_t *o)
{
    char err[1024];
    pf_model_t *model;
    pf_load_opts_t lo = o->load;
    lo.merge_children = 1;
    int rc = n_profiles > 1 || is_directory(profiles[0])
                 ? pf_model_load_set(profiles, n_profiles, &lo, &model, err, sizeof err)
                 : pf_model_load(profiles[0], &lo, &model, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "pyflow: %s\n", err);
        return -1;
    }
    rc = 0;
    if (o->text && pf_render_text(model, o->text_out, o->topts) < 0)
        rc = -1;
    if (o->json && write_rendering(model, o->json, o, R_JSON) < 0)
        rc = -1;
    if (o->dot && write_rendering(model, o->dot, o, R_DOT) < 0)
        rc = -1;
    if (o->html && write_rendering(model, o->html, o, R_HTML) < 0)
        rc = -1;
    pf_model_free(model);
    return rc;
}

static int render(const char *profile, const outputs_t *o)
{
    return render_set(&profile, 1, o);
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
    if (o.json && strcmp(o.json, "-") != 0 && check_writable("JSON report", o.json) != 0)
        return 2;
    if (o.dot && strcmp(o.dot, "-") != 0 && check_writable("flow graph", o.dot) != 0)
        return 2;
    if (o.html && strcmp(o.html, "-") != 0 && check_writable("HTML report", o.html) != 0)
        return 2;

    char tmpdir[PATH_MAX] = "";
    char profile[PATH_MAX];
    if (o.profile) {
        snprintf(profile, sizeof profile, "%s", o.profile);
        remove_children(profile);
        if (unlink(profile) != 0 && errno != ENOENT) {
            fprintf(stderr, "pyflow: cannot replace the profile %s: %s\n", profile, strerror(errno));
            return 2;
        }
        if (check_writable("profile", profile) != 0)
            return 2;
    } else {
        const char *t = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/pyflow-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(tmpdir)) {
            /* Nowhere to put the profile: the program still runs, as the user asked, just unprofiled. */
            fprintf(stderr, "pyflow: cannot create a temporary directory for the profile (%s): %s; running the "
                    "program without profiling (set TMPDIR, or use -o FILE)\n", tmpdir, strerror(errno));
            pf_child_status_t st;
            if (pf_launch_run(&o, &py, libdir, NULL, &st) != 0)
                return 2;
            return finish_like(&st);
        }
        snprintf(profile, sizeof profile, "%s/profile.pflow", tmpdir);
        if (check_writable("profile", profile) != 0)
            return 2;
    }

    pf_child_status_t st;
    if (pf_launch_run(&o, &py, libdir, profile, &st) != 0)
        return 2;
    int appended = pf_trailer_append(profile, &st);
    if (appended < 0)
        fprintf(stderr, "pyflow: could not finish the profile %s (%s): the report may miss the exit status\n",
                profile, strerror(-appended));
    if (appended == 1) {
        fprintf(stderr, "pyflow: no profile was recorded: the program did not start under pyflow's runtime\n");
    } else {
        pf_text_opts_t topts = {.max_lines = o.max_lines, .width = terminal_width(o.width), .color = want_color(),
                                .profile_path = o.profile, .reduced = o.reduced};
        outputs_t out = {.load = {.profile_only = o.profile_only, .profile_all = o.profile_all},
                         .text = !o.no_report, .text_out = stderr, .topts = &topts, .json = o.json, .dot = o.dot,
                         .html = o.html,
                         .dot_min_bytes = o.dot_min_bytes ? (double)o.dot_min_bytes : 65536.0, .dot_all = o.dot_all};
        /* --no-report and no other rendering: the profile is all that was asked for, and loading a big one
         * costs seconds and about twice its size in memory */
        int wanted = out.text || out.json || out.dot || out.html;
        if (wanted && render(profile, &out) != 0 && !o.no_report)
            fprintf(stderr, "pyflow: the report could not be produced (see above)\n");
    }
    if (tmpdir[0]) {
        remove_children(profile);
        unlink(profile);
        rmdir(tmpdir);
    }
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
                     strcmp(a, "--max-lines") == 0 || strcmp(a, "--width") == 0 || strcmp(a, "--profile-only") == 0;
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
        else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
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
    if (!json && !dot && !html && strcmp(format, "text") != 0) {
        fprintf(stderr, "pyflow: unknown format %s (text, json, dot or html)\n", format);
        return 2;
    }
    if (json || dot || html) {
        outputs_t o = {.load = load, .json = json ? (out ? out : "-") : NULL,
                       .dot = dot ? (out ? out : "-") : NULL, .html = html ? (out ? out : "-") : NULL,
                       .dot_min_bytes = 65536.0, .dot_all = dot_all};
        return render_set(profiles, n_profiles, &o) == 0 ? 0 : 2;
    }
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
        fprintf(stderr, "pyflow: cannot write %s: %s\n", out, strerror(errno));
        return 2;
    }
    topts.width = out ? (topts.width ? topts.width : 100) : terminal_width(topts.width);
    topts.color = !out && isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
    outputs_t o = {.load = load, .text = 1, .text_out = f, .topts = &topts};
    int rc = render_set(profiles, n_profiles, &o);
    if (out)
        fclose(f);
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
    if (strcmp(argv[1], "env") == 0)
        return pf_cli_env(argc - 1, argv + 1);
    fprintf(stderr, "pyflow: unknown command %s (run, report, env or info; see `pyflow --help`)\n", argv[1]);
    return 2;
}
