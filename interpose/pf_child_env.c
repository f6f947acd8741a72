/* pf_child_env.c - will a program the profiled one starts be profiled too (pf_child_env.h). */
#include "pf_child_env.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pf_runtime.h"
#include "pf_shebang.h"

int pf_preload_entry_is_ours(const char *p, size_t len)
{
    size_t n = strlen(PF_RUNTIME_SONAME);
    return len >= n && memcmp(p + len - n, PF_RUNTIME_SONAME, n) == 0 && (len == n || p[len - n - 1] == '/');
}

/* The value of name in envp, or NULL. */
static const char *env_value(char *const envp[], const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; envp && envp[i]; i++)
        if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
            return envp[i] + n + 1;
    return NULL;
}

int pf_env_profiles(char *const envp[])
{
    const char *output = env_value(envp, PF_ENV_OUTPUT), *preload = env_value(envp, "LD_PRELOAD");
    if (!output || !*output || !preload)
        return 0;
    for (const char *p = preload; *p;) {
        size_t len = strcspn(p, ": ");      /* ld.so separates LD_PRELOAD entries by colons or blanks */
        if (pf_preload_entry_is_ours(p, len))
            return 1;
        p += len;
        p += *p != '\0';
    }
    return 0;
}

static int launcher_kind(const char *path);

/* A "#!" line naming a shell: #!/bin/sh, #!/usr/bin/env bash. */
static int shebang_names_shell(const char *line)
{
    char program[128];
    return pf_shebang_program(line, program, sizeof program) == 0 && launcher_kind(program) == 2;
}

int pf_program_is_python(const char *path, char *const envp[])
{
    if (!path)
        return 0;
    int named = strncmp(pf_file_name(path), "python", 6) == 0;
    if (!strchr(path, '/'))
        return named;   /* execvp's bare name: its file is somewhere along PATH, not looked for */
    int saved = errno;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        errno = saved;
        return named ? 1 : -1;
    }
    char line[256];
    ssize_t n = read(fd, line, sizeof line - 1);
    close(fd);
    errno = saved;
    if (n < 2 || line[0] != '#' || line[1] != '!')
        return named;   /* a binary: by its name */
    /* a script: by its interpreter (python3-config is a shell script), a shell script by what it runs */
    line[n] = '\0';
    line[strcspn(line, "\n")] = '\0';
    if (strstr(line, "python"))
        return 1;
    return shebang_names_shell(line) && pf_script_runs_python(path, envp);
}

int pf_script_runs_python(const char *path, char *const envp[])
{
    /* on the stack: this may run in a vfork child, which must not allocate */
    char text[PF_SCRIPT_READ_BYTES];
    int saved = errno;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        errno = saved;
        return 0;
    }
    size_t used = 0;
    ssize_t n;
    while (used < sizeof text - 1 && (n = read(fd, text + used, sizeof text - 1 - used)) > 0)
        used += (size_t)n;
    close(fd);
    errno = saved;
    text[used] = '\0';
    if (memchr(text, '\0', used) != NULL)
        return 0;       /* not text */
    if (used == sizeof text - 1) {     /* a longer script: its last line here may be cut */
        char *last = strrchr(text, '\n');
        if (last)
            *last = '\0';
    }
    return pf_command_runs_python(text[0] == '#' && text[1] == '!' ? text + strcspn(text, "\n") : text, envp);
}

/* Programs that only start others, the shells first: 0 for none, 1 for a launcher, 2 for a shell. */
static int launcher_kind(const char *path)
{
    static const char *const launchers[] = {"sh", "bash", "dash", "zsh", "ksh", /* the shells */
                                            "env", "nice", "nohup", "timeout", "time", "stdbuf", "xargs", "setsid",
                                            "taskset", "chrt", "ionice", "sudo", "su", "runuser", "make", "uv",
                                            "pip", "valgrind", "valgrind.bin", NULL};   /* valgrind.bin: Debian's */
    const int shells = 5;
    const char *base = pf_file_name(path);
    for (int i = 0; launchers[i]; i++)
        if (strcmp(base, launchers[i]) == 0)
            return i < shells ? 2 : 1;
    return 0;
}

int pf_is_launcher(const char *path)
{
    return launcher_kind(path) != 0;
}

/* A launcher's argument it passes over to reach the program: an option, VAR=value, a number (a
 * duration, a priority). */
static int skipped_argument(const char *arg)
{
    if (arg[0] == '-' || strchr(arg, '='))
        return 1;
    size_t digits = strspn(arg, "0123456789.");
    return digits > 0 && (arg[digits] == '\0' || (arg[digits + 1] == '\0' && strchr("smhd", arg[digits])));
}

int pf_launches_python(const char *path, char *const argv[], char *const envp[])
{
    if (!path || !argv || !argv[0])
        return 0;
    if (launcher_kind(path) == 2) {
        for (size_t i = 1; argv[i]; i++) {
            if (argv[i][0] == '-' && argv[i][1] != '-' && strchr(argv[i], 'c'))   /* -c, bash -lc, sh -ec */
                return argv[i + 1] && pf_command_runs_python(argv[i + 1], envp);
            if (argv[i][0] != '-' && argv[i][0] != '+')
                return pf_script_runs_python(argv[i], envp);     /* sh job.sh */
        }
        return 0;
    }
    for (size_t i = 1; argv[i]; i++) {
        if (skipped_argument(argv[i]))
            continue;
        if (strncmp(pf_file_name(argv[i]), "python", 6) == 0)
            return 1;
        if (!pf_is_launcher(argv[i]))
            return 0;
    }
    return 0;
}

/* Shell variables a command line set before using them (PY=python3; "$PY" x.py), kept in place. */
#define PF_SHELL_VARS 8
typedef struct shell_vars {
    char name[PF_SHELL_VARS][32];
    char value[PF_SHELL_VARS][64];
    unsigned n;
} shell_vars_t;

static void shell_vars_set(shell_vars_t *v, const char *assignment)
{
    size_t len = strcspn(assignment, "=");
    if (len == 0 || len >= sizeof v->name[0])
        return;
    unsigned i = v->n < PF_SHELL_VARS ? v->n++ : PF_SHELL_VARS - 1;     /* a full table forgets the last */
    memcpy(v->name[i], assignment, len);
    v->name[i][len] = '\0';
    strncpy(v->value[i], assignment + len + 1, sizeof v->value[0] - 1);
    v->value[i][sizeof v->value[0] - 1] = '\0';
}

/* The value of $NAME or ${NAME} (word), set earlier in the command line or else in the environment the
 * shell is given; NULL when neither says, or word is no variable reference. */
static const char *shell_var(const shell_vars_t *v, const char *word, char *const envp[])
{
    if (word[0] != '$')
        return NULL;
    char name[32];
    const char *start = word + 1 + (word[1] == '{');
    size_t len = strcspn(start, "}");
    if (len == 0 || len >= sizeof name)
        return NULL;
    memcpy(name, start, len);
    name[len] = '\0';
    for (unsigned i = v->n; i-- > 0;)
        if (strcmp(v->name[i], name) == 0)
            return v->value[i];
    return env_value(envp, name);
}

int pf_command_runs_python(const char *command, char *const envp[])
{
    static const char separators[] = ";&|(`\n";
    shell_vars_t vars = {.n = 0};
    int command_position = 1;
    for (const char *p = command; p && *p;) {
        size_t blank = strspn(p, " \t\"'");
        p += blank;
        if (!*p)
            break;
        if (strchr(separators, *p)) {
            command_position = 1;
            p++;
            continue;
        }
        size_t len = strcspn(p, " \t\"';&|()`\n");
        if (len == 0) {     /* ')': a subshell's end, no word. Step over it: this runs in a vfork child,
                             * whose parent waits for its exec, so a loop that stood still here hung both */
            command_position = 0;
            p++;
            continue;
        }
        char word[64];
        size_t n = len < sizeof word - 1 ? len : sizeof word - 1;
        memcpy(word, p, n);
        word[n] = '\0';
        p += len;
        if (!command_position)
            continue;
        if (strchr(word, '=')) {
            shell_vars_set(&vars, word);    /* VAR=value before the command, or alone */
            continue;
        }
        const char *value = shell_var(&vars, word, envp);
        const char *program = value ? value : word;     /* "$PYTHON" job.py */
        if (strncmp(pf_file_name(program), "python", 6) == 0)
            return 1;
        /* exec is the shell's own, not a program: what follows it is the command */
        command_position = pf_is_launcher(program) || strcmp(program, "exec") == 0 || skipped_argument(program);
    }
    return 0;
}

const char *pf_path_lookup(const char *file, char *buf, size_t cap)
{
    if (!file || !*file || strchr(file, '/'))
        return file;
    int saved = errno;
    const char *path = getenv("PATH");
    if (!path)
        path = "/bin:/usr/bin";     /* glibc's default for the exec*p functions */
    size_t flen = strlen(file);
    const char *found = file;
    for (const char *dir = path;; dir += strcspn(dir, ":") + 1) {
        size_t dlen = strcspn(dir, ":");
        if (dlen + 1 + flen < cap) {
            memcpy(buf, dlen ? dir : ".", dlen ? dlen : 1);     /* an empty entry is the current directory */
            size_t at = dlen ? dlen : 1;
            buf[at] = '/';
            memcpy(buf + at + 1, file, flen + 1);
            if (access(buf, X_OK) == 0) {
                found = buf;
                break;
            }
        }
        if (!dir[dlen])
            break;
    }
    errno = saved;
    return found;
}

size_t pf_command_line(char *buf, size_t cap, char *const argv[])
{
    size_t used = 0;
    if (!cap)
        return 0;
    for (size_t i = 0; argv && argv[i] && used + 1 < cap; i++) {
        const char *arg = i == 0 ? pf_file_name(argv[0]) : argv[i];
        if (i) {
            if (used + 2 >= cap)
                break;
            buf[used++] = ' ';
        }
        size_t len = strlen(arg);
        if (len > cap - 1 - used)
            len = cap - 1 - used;
        memcpy(buf + used, arg, len);
        used += len;
    }
    buf[used] = '\0';
    return used;
}
