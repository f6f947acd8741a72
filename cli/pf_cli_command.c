/* pf_cli_command.c - what the user named after pyflow's options, read as a shell would read it.
 *
 * `pyflow run app.py` runs a script with the default interpreter. A user who copies a command line in
 * front of pyflow types `pyflow run python3 -X dev app.py` or `pyflow run pytest -x`: the first names the
 * interpreter (and Python's own options), the second a Python program installed on PATH, which runs under
 * the interpreter its `#!` line names, as it would when typed alone. Anything else that is not Python
 * source (a compiled program) is refused before it starts, rather than fed to Python as a script.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pf_cli_int.h"
#include "pf_python_args.h"
#include "pf_shebang.h"

/* python, python3, python3.12: the names interpreters are installed under. */
static int interpreter_name(const char *name, size_t len)
{
    if (len < 6 || strncmp(name, "python", 6) != 0)
        return 0;
    for (size_t k = 6; k < len; k++)
        if (!(name[k] >= '0' && name[k] <= '9') && name[k] != '.')
            return 0;
    return 1;
}

int pf_cli_names_interpreter(const char *arg)
{
    const char *base = pf_file_name(arg);
    if (!interpreter_name(base, strlen(base)))
        return 0;
    char path[PATH_MAX];
    struct stat st;
    return pf_cli_find_on_path(arg, path, sizeof path) == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int push(pf_run_opts_t *o, char *arg)
{
    if (!arg)
        return -1;
    o->python_opts[o->n_python_opts++] = arg;
    return 0;
}

static int no_program(const pf_run_opts_t *o)
{
    fprintf(stderr, "pyflow: nothing to run after %s and its options: give a script, -m MODULE or -c CODE\n",
            o->python);
    return -1;
}

/* Python's own options (core/pf_python_args.h: as CPython's getopt reads them) into o->python_opts, and
 * what they end with into o->kind and o->target. Options Python rejects are passed on for Python to
 * reject. */
int pf_cli_take_python_options(pf_run_opts_t *o, int argc, char **argv, int i)
{
    o->python_opts = calloc((size_t)argc + 1, sizeof *o->python_opts);
    if (!o->python_opts)
        return -1;
    pf_python_target_t t;
    pf_python_target(argc, argv, i, &t);
    for (; i < t.word; i++)
        if (push(o, argv[i]) != 0)
            return -1;
    if (t.kind == PF_PYTHON_NONE) {
        for (; i < argc; i++)      /* a "--" at the end */
            if (push(o, argv[i]) != 0)
                return -1;
        return no_program(o);
    }
    if (t.kind != PF_PYTHON_SCRIPT && !t.target) {
        fprintf(stderr, "pyflow: %s's -%c needs an argument\n", o->python, argv[t.word][t.cluster]);
        return -1;
    }
    if (t.cluster > 1 && push(o, strndup(argv[t.word], t.cluster)) != 0)
        return -1;
    o->kind = t.kind == PF_PYTHON_SCRIPT ? PF_TARGET_SCRIPT : t.kind == PF_PYTHON_CODE ? PF_TARGET_CODE
                                                                                        : PF_TARGET_MODULE;
    o->target = t.target;
    return t.next;
}

/* The interpreter a `#!` line names: its path, or the name `env` looks up. Returns 0 and fills out when
 * it is a Python, else -1. */
static int shebang_python(const char *path, char *out, size_t size)
{
    char line[512];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, line, sizeof line - 1);
    close(fd);
    if (n < 0)
        return -1;
    line[n] = '\0';
    if (pf_shebang_program(line, out, size) != 0)
        return -1;
    const char *base = pf_file_name(out);
    return interpreter_name(base, strlen(base)) ? 0 : -1;
}

int pf_cli_is_elf(const char *path)
{
    unsigned char magic[4] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, magic, sizeof magic);
    close(fd);
    return n == 4 && memcmp(magic, "\x7f" "ELF", 4) == 0;
}

int pf_cli_resolve_script(pf_run_opts_t *o)
{
    if (o->kind != PF_TARGET_SCRIPT || strcmp(o->target, "-") == 0)
        return 0;
    struct stat st;
    if (o->python_chosen != 3 && !strchr(o->target, '/') && stat(o->target, &st) != 0 && errno == ENOENT &&
        pf_cli_find_on_path(o->target, o->command_path, sizeof o->command_path) == 0 &&
        stat(o->command_path, &st) == 0 && S_ISREG(st.st_mode)) {
        const char *found = o->command_path;
        char python[PATH_MAX];
        if (shebang_python(found, python, sizeof python) != 0) {
            fprintf(stderr, "pyflow: %s (%s) is not a Python program; pyflow runs Python scripts, modules "
                    "and commands whose #! line names Python\n", o->target, found);
            return -1;
        }
        o->target = found;
        /* as when it is typed alone: the interpreter its #! line names, unless one was asked for */
        if (!o->python_chosen) {
            snprintf(o->command_python, sizeof o->command_python, "%s", python);
            o->python = o->command_python;
        }
        return 0;
    }
    if (stat(o->target, &st) == 0 && S_ISREG(st.st_mode) && pf_cli_is_elf(o->target)) {
        fprintf(stderr, "pyflow: %s is a compiled program, not a Python script; pyflow runs Python (to name "
                "the interpreter: pyflow run python3 app.py)\n", o->target);
        return -1;
    }
    return 0;
}
