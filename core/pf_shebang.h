/* pf_shebang.h - the program a script's "#!" line runs, read the same way by the launcher (`pyflow run
 * pytest`: which interpreter) and by the runtime's spawn hooks (is this child a Python, a shell?). No
 * allocation, no errno change: the hooks may run it in a vfork child. */
#ifndef PF_SHEBANG_H
#define PF_SHEBANG_H

#include <stddef.h>

/* The file name part of a path (after its last '/'). */
const char *pf_file_name(const char *path);

/* The program a script starting with text runs: the path on its "#!" line, or for
 * `#!/usr/bin/env [-S] [VAR=value...] prog`, prog. text may hold more lines (only the first is read).
 * Writes it NUL-terminated into out; returns 0, or -1 when text has no "#!" or the word does not fit. */
int pf_shebang_program(const char *text, char *out, size_t cap);

#endif /* PF_SHEBANG_H */
