/* pf_python_args.c - what a Python command line runs (pf_python_args.h). */
#include "pf_python_args.h"

#include <string.h>

void pf_python_target(int argc, char *const *argv, int i, pf_python_target_t *out)
{
    *out = (pf_python_target_t){PF_PYTHON_NONE, NULL, argc, 0, argc};
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0 && i + 1 < argc) {
            *out = (pf_python_target_t){PF_PYTHON_SCRIPT, argv[i + 1], i, 0, i + 2};
            return;
        }
        if (a[0] != '-' || strcmp(a, "-") == 0) {
            *out = (pf_python_target_t){PF_PYTHON_SCRIPT, a, i, 0, i + 1};
            return;
        }
        if (a[1] == '-') {
            i += strcmp(a, "--check-hash-based-pycs") == 0;     /* and its value */
            continue;
        }
        for (size_t k = 1; a[k]; k++) {
            if (a[k] == 'c' || a[k] == 'm') {
                pf_python_kind_t kind = a[k] == 'c' ? PF_PYTHON_CODE : PF_PYTHON_MODULE;
                if (a[k + 1])
                    *out = (pf_python_target_t){kind, a + k + 1, i, k, i + 1};
                else if (i + 1 < argc)
                    *out = (pf_python_target_t){kind, argv[i + 1], i, k, i + 2};
                else
                    *out = (pf_python_target_t){kind, NULL, i, k, argc};
                return;
            }
            if (a[k] == 'W' || a[k] == 'X') {
                i += a[k + 1] == '\0';      /* its value is the next argument */
                break;
            }
        }
    }
}
