/* pf_runtime_libs.h - which loaded objects are the runtime under a Python program (the interpreter, libc,
 * the dynamic loader, libm, pyflow and its libunwind) rather than a library the program chose. A native
 * frame in one of them is never a native site: the reporter names, for an allocation or a copy, the
 * innermost native frame outside them (report/pf_sweep_stacks.c), and the runtime keeps a native stack
 * only down to that frame (recorder/pf_modules.c). One rule for both, on the path a MODULE record holds. */
#ifndef PF_RUNTIME_LIBS_H
#define PF_RUNTIME_LIBS_H

#include <string.h>

static inline int pf_path_is_runtime_library(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *b = slash ? slash + 1 : path;
    return strncmp(b, "libc.so", 7) == 0 || strncmp(b, "libc-", 5) == 0 || strncmp(b, "ld-linux", 8) == 0 ||
           strncmp(b, "libpython", 9) == 0 || strncmp(b, "python3", 7) == 0 || strncmp(b, "libpyflow", 9) == 0 ||
           strncmp(b, "libm.so", 7) == 0 || strncmp(b, "libunwind", 9) == 0;
}

#endif /* PF_RUNTIME_LIBS_H */
