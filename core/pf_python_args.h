/* pf_python_args.h - what a Python command line runs, read past the interpreter's own options the way
 * CPython's getopt reads them: flags cluster (-uB), -W and -X take the rest of their cluster or the next
 * argument, --check-hash-based-pycs the next one, and -c/-m (the rest of the cluster or the next argument),
 * `-`, `--` or the first other argument end them. The launcher splits a command line with it
 * (cli/pf_cli_command.c); the reporter reads a `python -c CODE` program's source from it. */
#ifndef PF_PYTHON_ARGS_H
#define PF_PYTHON_ARGS_H

#include <stddef.h>

typedef enum pf_python_kind {
    PF_PYTHON_NONE,     /* the options ran out before a program */
    PF_PYTHON_SCRIPT,   /* a file, or "-" (stdin) */
    PF_PYTHON_MODULE,   /* -m */
    PF_PYTHON_CODE,     /* -c */
} pf_python_kind_t;

typedef struct pf_python_target {
    pf_python_kind_t kind;
    const char *target;     /* the script, module or code; NULL when -c/-m was the last argument */
    int word;               /* argv's index of the word that ends the options (the script, "--", -c/-m's) */
    size_t cluster;         /* -c/-m: the characters of that word before the letter ("-B" of "-Bc") */
    int next;               /* argv's index after the target: the program's own arguments */
} pf_python_target_t;

/* Reads argv[i..argc) into *out (every field set). */
void pf_python_target(int argc, char *const *argv, int i, pf_python_target_t *out);

#endif /* PF_PYTHON_ARGS_H */
