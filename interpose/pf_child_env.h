/* pf_child_env.h - will a program the profiled one starts be profiled too?
 *
 * A child is profiled when it runs Python with pyflow's runtime in LD_PRELOAD and PYFLOW_OUTPUT set. A
 * program that hands its child an environment of its own (subprocess's env=, os.execve, posix_spawn's
 * envp) without them gets an unprofiled child; the spawn hooks say so in the SPAWN record
 * (PF_SPAWN_UNPROFILED), so the report can name the line that started it instead of staying silent.
 * Everything here may run in a vfork child: no allocation, no locks, errno left as found.
 */
#ifndef PF_CHILD_ENV_H
#define PF_CHILD_ENV_H

#include <stddef.h>

/* 1 when the LD_PRELOAD entry p[0..len) names pyflow's runtime (PF_RUNTIME_SONAME). */
int pf_preload_entry_is_ours(const char *p, size_t len);

/* 1 when a process given environment envp loads pyflow's runtime and is asked to profile. */
int pf_env_profiles(char *const envp[]);

/* Whether the program at path, started with environment envp, runs Python: a script by its "#!" line
 * (naming python; naming a shell: by pf_script_runs_python), anything else by its file name (starting
 * with "python"); a bare name is not looked for along PATH. Returns 1 or 0, or -1 when that cannot be told
 * yet (a path without its file, not named python: exec trying a PATH entry that lacks it). */
int pf_program_is_python(const char *path, char *const envp[]);

/* 1 when the shell script at path runs Python: a command in it does (pf_command_runs_python), among its
 * first PF_SCRIPT_READ_BYTES. */
#define PF_SCRIPT_READ_BYTES 8192
int pf_script_runs_python(const char *path, char *const envp[]);

/* 1 when the program at path only starts other programs: a shell (for subprocess's shell=True, os.system),
 * env, nice, timeout... */
int pf_is_launcher(const char *path);

/* 1 when a launcher run as argv runs Python: a shell's -c command (pf_command_runs_python) or script
 * (pf_script_runs_python), or the program
 * env, nice, timeout... start (the first argument not an option, a VAR=value or a number), through further
 * launchers. */
int pf_launches_python(const char *path, char *const argv[], char *const envp[]);

/* 1 when a shell command line runs Python: a word in command position (first, after ; & | ( or a
 * launcher, past VAR=value assignments) whose file name starts with "python", or a variable there ($PY,
 * ${PY}) whose value does: as the command line set it before, else as envp (the shell's environment, may
 * be NULL) has it. */
int pf_command_runs_python(const char *command, char *const envp[]);

/* The program an exec*p function or posix_spawnp runs for file: file itself when it has a slash, else the
 * first executable file/PATH entry (the caller's PATH, as they search it) written into buf, else file.
 * C code's execvp("tool") would otherwise be judged by the bare name alone (glibc's own PATH retries call
 * execve internally, past the hooks). */
const char *pf_path_lookup(const char *file, char *buf, size_t cap);

/* argv joined by spaces, argv[0] by its file name only, cut to fit cap bytes (NUL included).
 * Returns the length written. */
size_t pf_command_line(char *buf, size_t cap, char *const argv[]);

#endif /* PF_CHILD_ENV_H */
