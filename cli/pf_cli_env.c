/* pf_cli_env.c - `pyflow env --output-dir DIR`: the environment that makes a Python process started by
 * someone else (a cluster's scheduler, Slurm, Ray, a shell loop) profile itself into DIR.
 *
 * Such a process gets the runtime preloaded and PYFLOW_OUTPUT_DIR instead of pyflow run's PYFLOW_OUTPUT:
 * the runtime then writes DIR/<host>.<pid> (interpose/pf_rt_init.c), so processes of many hosts can share
 * one directory (or be copied into one) and `pyflow report DIR` merges them (report/pf_model_dir.c).
 * Printed three ways: shell export lines (default), one srun --export value, and Ray's runtime_env JSON.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pf_cli_int.h"
#include "pf_runtime.h"

typedef struct var {
    const char *name;
    char value[PATH_MAX + 64];
} var_t;

/* Single-quoted for a POSIX shell. */
static void put_shell_quoted(const char *s)
{
    putchar('\'');
    for (; *s; s++)
        if (*s == '\'')
            fputs("'\\''", stdout);
        else
            putchar(*s);
    putchar('\'');
}

static void put_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++)
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", *s);
        else
            putchar(*s);
    putchar('"');
}

int pf_cli_env(int argc, char **argv)
{
    const char *dir = NULL, *format = "shell";
    uint64_t sample = 0;
    int exact = 0, native = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int valued = strcmp(a, "--output-dir") == 0 || strcmp(a, "--format") == 0 || strcmp(a, "--sample-bytes") == 0;
        if (valued && i + 1 >= argc) {
            fprintf(stderr, "pyflow: %s needs a value (see `pyflow --help`)\n", a);
            return 2;
        }
        if (strcmp(a, "--output-dir") == 0)
            dir = argv[++i];
        else if (strcmp(a, "--format") == 0)
            format = argv[++i];
        else if (strcmp(a, "--sample-bytes") == 0) {
            if (pf_cli_parse_bytes(argv[++i], &sample) != 0 || sample == 0) {
                fprintf(stderr, "pyflow: --sample-bytes needs a size such as 256k, not %s\n", argv[i]);
                return 2;
            }
        } else if (strcmp(a, "--exact") == 0)
            exact = 1;
        else if (strcmp(a, "--native") == 0)
            native = 1;
        else {
            fprintf(stderr, "pyflow: env: unknown argument %s (pyflow env --output-dir DIR [--format shell|srun|json])\n", a);
            return 2;
        }
    }
    if (!dir || !*dir) {
        fprintf(stderr, "pyflow: env needs --output-dir DIR (where each process writes its profile)\n");
        return 2;
    }
    int shell = strcmp(format, "shell") == 0, srun = strcmp(format, "srun") == 0, json = strcmp(format, "json") == 0;
    if (!shell && !srun && !json) {
        fprintf(stderr, "pyflow: env: unknown format %s (shell, srun or json)\n", format);
        return 2;
    }
    if (mkdir(dir, 0777) != 0 && access(dir, W_OK) != 0) {
        fprintf(stderr, "pyflow: cannot write profiles into %s: %s\n", dir, strerror(errno));
        return 2;
    }
    char absolute[PATH_MAX];
    if (!realpath(dir, absolute)) {
        fprintf(stderr, "pyflow: cannot use %s: %s\n", dir, strerror(errno));
        return 2;
    }
    char libdir[PATH_MAX];
    if (pf_launch_libdir(libdir, sizeof libdir) != 0) {
        fprintf(stderr, "pyflow: cannot find the runtime library (%s)\n", PF_RUNTIME_SONAME);
        return 2;
    }
    var_t vars[5];
    size_t n = 0;
    vars[n].name = "LD_PRELOAD";
    snprintf(vars[n++].value, sizeof vars[0].value, "%s/%s", libdir, PF_RUNTIME_SONAME);
    vars[n].name = PF_ENV_OUTPUT_DIR;
    snprintf(vars[n++].value, sizeof vars[0].value, "%s", absolute);
    if (sample) {
        vars[n].name = PF_ENV_SAMPLE_BYTES;
        snprintf(vars[n++].value, sizeof vars[0].value, "%llu", (unsigned long long)sample);
    }
    if (exact) {
        vars[n].name = PF_ENV_EXACT;
        snprintf(vars[n++].value, sizeof vars[0].value, "1");
    }
    if (native) {
        vars[n].name = PF_ENV_NATIVE;
        snprintf(vars[n++].value, sizeof vars[0].value, "1");
    }
    for (size_t i = 0; i < n; i++) {
        if (shell) {
            printf("export %s=", vars[i].name);
            put_shell_quoted(vars[i].value);
            if (i == 0)     /* keep what was preloaded already, after pyflow's runtime */
                fputs("\"${LD_PRELOAD:+:$LD_PRELOAD}\"", stdout);
            putchar('\n');
        } else if (srun) {
            printf("%s%s=%s", i ? "," : "ALL,", vars[i].name, vars[i].value);
        } else {
            printf(i ? ", " : "{\"env_vars\": {");
            put_json_string(vars[i].name);
            printf(": ");
            put_json_string(vars[i].value);
        }
    }
    if (srun)
        putchar('\n');
    if (json)
        printf("}}\n");
    return 0;
}
