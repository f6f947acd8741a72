/* pf_child_env.c - will a program the profiled one starts be profiled too (pf_child_env.h). */
#include "pf_child_env.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "pf_runtime.h"

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

static const char *file_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int pf_program_is_python(const char *path)
{
    if (!path)
        return 0;
    int named = strncmp(file_name(path), "python", 6) == 0;
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
    /* a script: by its interpreter (python3-config is a shell script) */
    line[n] = '\0';
    line[strcspn(line, "\n")] = '\0';
    return strstr(line, "python") != NULL;
}

size_t pf_command_line(char *buf, size_t cap, char *const argv[])
{
    size_t used = 0;
    if (!cap)
        return 0;
    for (size_t i = 0; argv && argv[i] && used + 1 < cap; i++) {
        const char *arg = i == 0 ? file_name(argv[0]) : argv[i];
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
