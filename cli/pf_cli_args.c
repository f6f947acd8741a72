/* pf_cli_args.c - `pyflow run` options. Options stop at the script, -m MODULE or -c CODE: everything
 * after belongs to the program, exactly as python itself would receive it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_cli_int.h"

int pf_cli_parse_bytes(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v <= 0)
        return -1;
    double mult = 1;
    if (*end) {
        switch (*end) {
        case 'k': case 'K': mult = 1024.0; break;
        case 'm': case 'M': mult = 1024.0 * 1024; break;
        case 'g': case 'G': mult = 1024.0 * 1024 * 1024; break;
        default: return -1;
        }
        end++;
        if (*end == 'i' || *end == 'I')
            end++;
        if (*end == 'b' || *end == 'B')
            end++;
        if (*end)
            return -1;
    }
    v *= mult;
    if (v < 1 || v > 1e18)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

static int usage_error(const char *fmt, const char *arg)
{
    fputs("pyflow: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs(" (see `pyflow run --help`)\n", stderr);
    return 2;
}

/* The value of an option given as "--opt VALUE" or "--opt=VALUE". */
static const char *option_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    /* a next argument that is an option is not this one's value: `--json -o F prog` forgot --json's file,
     * and taking "-o" for it ran F as the program (a value that starts with '-' can follow '=') */
    if (*i + 1 >= argc || (argv[*i + 1][0] == '-' && argv[*i + 1][1] != '\0'))
        return NULL;
    return argv[++*i];
}

/* "stores", "loads", "copies", "all", or a comma list of them ("stores,copies"). */
static int watch_modes_valid(const char *v)
{
    if (!*v)
        return 0;
    while (*v) {
        size_t n = strcspn(v, ",");
        if (!((n == 6 && strncmp(v, "stores", n) == 0) || (n == 5 && strncmp(v, "loads", n) == 0) ||
              (n == 6 && strncmp(v, "copies", n) == 0) || (n == 3 && strncmp(v, "all", n) == 0)))
            return 0;
        v += n;
        if (*v == ',' && *++v == '\0')
            return 0;
    }
    return 1;
}

static int is_option(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

int pf_cli_parse_run(int argc, char **argv, pf_run_opts_t *o)
{
    memset(o, 0, sizeof *o);
    const char *env_python = getenv("PYFLOW_PYTHON");
    o->python = env_python && *env_python ? env_python : "python3";
    o->python_chosen = env_python && *env_python;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        const char *v;
        if (strcmp(a, "-m") == 0 || strcmp(a, "-c") == 0) {
            if (i + 1 >= argc)
                return usage_error("%s needs an argument", a);
            o->kind = a[1] == 'm' ? PF_TARGET_MODULE : PF_TARGET_CODE;
            o->target = argv[++i];
            i++;
            break;
        }
        if (a[0] != '-' || strcmp(a, "-") == 0) {
            o->kind = PF_TARGET_SCRIPT;
            o->target = a;
            i++;
            break;
        }
        if (strcmp(a, "--") == 0) {
            if (i + 1 >= argc)
                return usage_error("%s must be followed by the script", a);
            o->kind = PF_TARGET_SCRIPT;
            o->target = argv[++i];
            i++;
            break;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            o->help = 1;
            return 0;
        }
        if (is_option(a, "--python")) {
            if (!(v = option_value(argc, argv, &i, "--python")))
                return usage_error("%s needs a path", "--python");
            o->python = v;
            o->python_chosen = 2;
        } else if (strcmp(a, "-o") == 0 || is_option(a, "--output")) {
            if (!(v = option_value(argc, argv, &i, a[1] == 'o' ? "-o" : "--output")))
                return usage_error("%s needs a file name", a);
            o->profile = v;
        } else if (is_option(a, "--json")) {
            if (!(v = option_value(argc, argv, &i, "--json")))
                return usage_error("%s needs a file name", "--json");
            o->json = v;
        } else if (is_option(a, "--dot-min-bytes")) {
            if (!(v = option_value(argc, argv, &i, "--dot-min-bytes")) || pf_cli_parse_bytes(v, &o->dot_min_bytes) != 0)
                return usage_error("%s needs a positive byte count (like 64k)", "--dot-min-bytes");
        } else if (strcmp(a, "--dot-all") == 0) {
            o->dot_all = 1;
        } else if (is_option(a, "--html")) {
            if (!(v = option_value(argc, argv, &i, "--html")))
                return usage_error("%s needs a file name", "--html");
            o->html = v;
        } else if (is_option(a, "--dot")) {
            if (!(v = option_value(argc, argv, &i, "--dot")))
                return usage_error("%s needs a file name", "--dot");
            o->dot = v;
        } else if (is_option(a, "--profile-only")) {
            if (!(v = option_value(argc, argv, &i, "--profile-only")) || !*v)
                return usage_error("%s needs a pattern (a part of the file names to report)", "--profile-only");
            o->profile_only = v;
        } else if (strcmp(a, "--profile-all") == 0) {
            o->profile_all = 1;
        } else if (strcmp(a, "--reduced") == 0) {
            o->reduced = 1;
        } else if (strcmp(a, "--exact") == 0) {
            o->exact = 1;
        } else if (strcmp(a, "--aggregate") == 0) {    /* docs/long-runs.md */
            o->aggregate = 1;
        } else if (is_option(a, "--aggregate-after")) {
            char *end;
            if (!(v = option_value(argc, argv, &i, "--aggregate-after")))
                return usage_error("%s needs a duration (like 90s, 10m or 2h)", "--aggregate-after");
            double n = strtod(v, &end);
            double unit = !*end ? 1 : !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60 : !strcmp(end, "h") ? 3600 : 0;
            if (!(n >= 0) || !unit || end == v || n * unit > 1e9)
                return usage_error("--aggregate-after needs a duration like 90s, 10m or 2h (not %s)", v);
            o->aggregate = 1;
            o->aggregate_after_ms = (uint64_t)(n * unit * 1000);
        } else if (is_option(a, "--aggregate-after-size")) {
            if (!(v = option_value(argc, argv, &i, "--aggregate-after-size")) ||
                pf_cli_parse_bytes(v, &o->aggregate_after_bytes) != 0 || o->aggregate_after_bytes < (1u << 20))
                return usage_error("%s needs a size of at least 1m (like 200m or 1g)", "--aggregate-after-size");
            o->aggregate = 1;
        } else if (strcmp(a, "--no-aggregate") == 0) {
            o->no_aggregate = 1;
        } else if (strcmp(a, "--native") == 0) {
            o->native = 1;
        } else if (strcmp(a, "--watch") == 0 || is_option(a, "--watch")) {
            /* bare --watch watches stores, the cheap mode */
            v = strchr(a, '=') ? a + strlen("--watch=") : "stores";
            if (!watch_modes_valid(v))
                return usage_error("--watch takes stores, loads, copies or all, or a comma list of them (not %s)", v);
            o->watch = v;
        } else if (strcmp(a, "--no-watch") == 0) {
            o->no_watch = 1;
        } else if (is_option(a, "--event")) {
            if (!(v = option_value(argc, argv, &i, "--event")) || !*v)
                return usage_error("%s needs an event name (see `pyflow info`)", "--event");
            o->watch_event = v;
        } else if (is_option(a, "--period")) {
            char *end;
            if (!(v = option_value(argc, argv, &i, "--period")))
                return usage_error("%s needs a number of events", "--period");
            unsigned long long n = strtoull(v, &end, 10);
            if (*end || !n || *v == '-')
                return usage_error("%s needs a positive number of events", "--period");
            o->watch_period = n;
        } else if (is_option(a, "--watch-budget")) {
            char *end;
            if (!(v = option_value(argc, argv, &i, "--watch-budget")))
                return usage_error("%s needs a percentage", "--watch-budget");
            unsigned long n = strtoul(v, &end, 10);
            if (*end || !n || n > 100 || *v == '-')
                return usage_error("--watch-budget needs a percentage from 1 to 100 (not %s)", v);
            o->watch_budget = (unsigned)n;
        } else if (strcmp(a, "--gpu-per-tensor") == 0) {
            o->gpu_per_tensor = 1;
        } else if (strcmp(a, "--no-report") == 0) {
            o->no_report = 1;
        } else if (is_option(a, "--sample-bytes") || is_option(a, "--object-bytes")) {
            int sample = a[2] == 's';
            const char *name = sample ? "--sample-bytes" : "--object-bytes";
            if (!(v = option_value(argc, argv, &i, name)) ||
                pf_cli_parse_bytes(v, sample ? &o->sample_bytes : &o->object_bytes) != 0)
                return usage_error("%s needs a positive byte count (like 512k or 4m)", name);
        } else if (is_option(a, "--max-profile")) {
            if (!(v = option_value(argc, argv, &i, "--max-profile")) ||
                pf_cli_parse_bytes(v, &o->max_profile_bytes) != 0 || o->max_profile_bytes < (1u << 20) ||
                o->max_profile_bytes > ((uint64_t)4 << 30))
                return usage_error("%s needs a size from 1m to 4g (like 512m)", "--max-profile");
        } else if (is_option(a, "--max-lines") || is_option(a, "--width")) {
            int lines = a[2] == 'm';
            const char *name = lines ? "--max-lines" : "--width";
            char *end;
            if (!(v = option_value(argc, argv, &i, name)))
                return usage_error("%s needs a number", name);
            long n = strtol(v, &end, 10);
            if (*end || n <= 0 || n > 100000)
                return usage_error("%s needs a positive number", name);
            if (lines)
                o->max_lines = (int)n;
            else
                o->width = (int)n;
        } else {
            return usage_error("unknown option %s", a);
        }
    }
    if (o->watch && o->no_watch)
        return usage_error("%s", "--watch and --no-watch together: give one");
    if (o->no_aggregate && o->aggregate)
        return usage_error("%s", "--no-aggregate with --aggregate, --aggregate-after or --aggregate-after-size: give one");
    if (!o->target)
        return usage_error("%s", "nothing to run: give a script, -m MODULE or -c CODE");
    if (o->kind == PF_TARGET_SCRIPT && pf_cli_names_interpreter(o->target)) {
        /* `pyflow run python3 [its options] app.py`: the interpreter, as on a shell's command line */
        if (o->python_chosen == 2) {
            fprintf(stderr, "pyflow: two interpreters given: --python %s and %s\n", o->python, o->target);
            return 2;
        }
        o->python = o->target;
        o->python_chosen = 3;
        o->target = NULL;
        if ((i = pf_cli_take_python_options(o, argc, argv, i)) < 0)
            return 2;
    }
    o->args = argv + i;
    o->nargs = argc - i;
    return 0;
}
