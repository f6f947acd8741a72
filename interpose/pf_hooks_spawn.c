/* pf_hooks_spawn.c - who started each thread and process (PF_REC_SPAWN, core/pf_format.h).
 *
 * A pool's worker thread running library code, or a child interpreter that multiprocessing or joblib
 * spawned, allocates with no line of the user's on its stack; the reporter charges that memory to the
 * user's line that started the thread or process (report/pf_model_origin.c). These hooks write what it
 * needs: the starting thread's Python stack, with the new thread's pthread_t or the new process's pid.
 *
 *  - pthread_create, fork, posix_spawn(p): in the starting thread, after the start succeeded, with a time
 *    taken before it (the new thread may write its first record before pthread_create returns).
 *  - vfork + exec (how CPython's subprocess and multiprocessing's spawn start children): vfork cannot be
 *    wrapped (the child returns from the wrapper's frame into its caller's, on the parent's stack), so the
 *    exec family writes the record instead, from the vfork child, which runs in its parent's memory with
 *    its parent's thread-local state while the parent thread waits. It writes into the parent's file as
 *    that thread would. A child that does not share its parent's memory (a fork whose handlers ran keeps
 *    pf_cfg.pid current; a raw clone does not) writes nothing: kcmp(KCMP_VM) tells which.
 *  - system(3) (os.system) starts its shell inside glibc, where no hook sees the pid: the record, written
 *    before the call, names pid 0, and the reporter matches it by time with the process whose chain of
 *    launchers began there (the shell passes PYFLOW_VIA on, pf_rt_init.c).
 *  - A process start whose environment leaves out pyflow's variables, of a program that runs Python
 *    (pf_child_env.h), is marked PF_SPAWN_UNPROFILED with its command line: nothing will profile it, and
 *    the report lists it. A process exec'ing itself into such a program writes that into its own file
 *    (child = its own pid), once.
 * Only Python frames are captured: the reporter looks for the user's line in them, nothing else.
 */
#include <dlfcn.h>
#include <limits.h>
#include <linux/kcmp.h>
#include <pthread.h>
#include <spawn.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pf_child_env.h"
#include "pf_hooks_int.h"
#include "pf_watch.h"   /* pf_watch_spawning, pf_watch_masked_birth */

#define PF_SPAWN_FNS(X)                                                                                       \
    X(pthread_create, int, (pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))                  \
    X(fork, pid_t, (void))                                                                                  \
    X(posix_spawn, int,                                                                                     \
      (pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *, char *const[],  \
       char *const[]))                                                                                      \
    X(posix_spawnp, int,                                                                                    \
      (pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *, char *const[],  \
       char *const[]))                                                                                      \
    X(execve, int, (const char *, char *const[], char *const[]))                                           \
    X(execv, int, (const char *, char *const[]))                                                           \
    X(execvp, int, (const char *, char *const[]))                                                          \
    X(execvpe, int, (const char *, char *const[], char *const[]))                                          \
    X(fexecve, int, (int, char *const[], char *const[]))                                                    \
    X(system, int, (const char *))

#define PF_SPAWN_FIELD(name, ret, args) ret(*name) args;
static struct {
    PF_SPAWN_FNS(PF_SPAWN_FIELD)
} real;
/* Filled from the constructor (pf_hooks_resolve_all, pf_rt_init), so that a vfork child never has to:
 * dlsym takes the loader's lock. A hook reached before it (another library's constructor starting a
 * thread) fills them itself. */
#define PF_SPAWN_SLOT(name, ret, args) PF_REAL_SLOT(name, real.name);
PF_SPAWN_FNS(PF_SPAWN_SLOT)

/* A process start's program, when it will run Python unprofiled (pf_child_env.h). */
typedef struct child {
    uint8_t flags;              /* PF_SPAWN_UNPROFILED, or 0 */
    uint16_t command_len;
    char command[PF_SPAWN_MAX_COMMAND + 1];
} child_t;

static const child_t plain_child;

/* Fills *c for a start of path with argv and envp (path searched along PATH first when search is set: the
 * exec*p functions). Returns -1 when that cannot be told yet (an exec trying a PATH entry that lacks the
 * program: the next try tells), else 0. The guard is raised: the copies made here are pyflow's own. */
static int judge_child(child_t *c, const char *path, char *const argv[], char *const envp[], int search)
{
    c->flags = 0;
    c->command_len = 0;
    if (pf_env_profiles(envp))
        return 0;
    pf_guard_enter(&pf_tls);
    char found[PATH_MAX];
    if (search)
        path = pf_path_lookup(path, found, sizeof found);
    int python = pf_program_is_python(path, envp);
    if (python == 0 && pf_is_launcher(path))
        python = pf_launches_python(path, argv, envp);   /* sh -c "python3 ...", env python3 ... */
    if (python > 0) {
        c->flags = PF_SPAWN_UNPROFILED;
        c->command_len = (uint16_t)pf_command_line(c->command, sizeof c->command, argv);
    }
    pf_guard_leave(&pf_tls);
    return python < 0 ? -1 : 0;
}

static void write_spawn(pf_tls_t *t, int kind, uint64_t child, uint64_t t_ns, const child_t *c)
{
    pf_record_spawn(t, kind, child, t_ns, c->flags, c->command, c->command_len);
}

/* In the starting thread: a start at t_ns (after it succeeded; before it, when its pid cannot be known). */
static void note_start(int kind, uint64_t child, uint64_t t_ns, const child_t *c)
{
    pf_tls_t *t = &pf_tls;
    if (t->guard || !__atomic_load_n(&pf_cfg.enabled, __ATOMIC_ACQUIRE))
        return;
    pf_guard_enter(t);
    pf_enter_recording(t);
    write_spawn(t, kind, child, t_ns, c);
    pf_guard_leave(t);
}

/* 0 when not recording (so the start needs no time stamp). */
static uint64_t start_time(void)
{
    return pf_tls.guard || !__atomic_load_n(&pf_cfg.enabled, __ATOMIC_ACQUIRE) ? 0 : pf_now_ns();
}

/* In a vfork child about to exec path: its parent thread's start of this pid, once (exec retries along
 * PATH). */
static void note_vfork_exec(pf_tls_t *t, uint32_t pid, const child_t *c)
{
    /* The parent thread must have a chunk of the current file: a vfork child must not start a thread. */
    if (pid == t->spawn_noted_pid || !pf_recorder_thread_has_chunk(t) ||
        syscall(SYS_kcmp, pid, (pid_t)pf_cfg.pid, KCMP_VM, 0, 0) != 0)
        return;
    pf_guard_enter(t);
    t->spawn_noted_pid = pid;
    t->in_vfork_child = 1;
    write_spawn(t, PF_SPAWN_PROCESS, pid, pf_now_ns(), c);
    t->in_vfork_child = 0;
    pf_guard_leave(t);
}

/* A process about to exec: says so in its file, with the command, so the report can tell the image that
 * ended there (into a program that is not Python, whose pid runs on) from one killed. Not where this
 * thread has recorded nothing in this file: a fork child exec'ing from C (subprocess on 3.8 and 3.9) then
 * leaves its file with its header alone, which the report skips. */
static void mark_exec(pf_tls_t *t, char *const argv[])
{
    char command[PF_SPAWN_MAX_COMMAND + 1];
    pf_guard_enter(t);
    pf_command_line(command, sizeof command, argv);    /* NUL-terminated, cut to fit */
    pf_enter_recording(t);
    pf_record_mark(t, PF_MARK_EXEC, 0, command);
    pf_guard_leave(t);
}

/* Before exec(path, argv, envp): a vfork child notes its start for its parent; a process about to exec
 * marks that in its own file, and one about to become an unprofiled Python notes that there too (once:
 * os.execvp tries one PATH entry after another). */
static void note_exec(const char *path, char *const argv[], char *const envp[], int search)
{
    static uint32_t self_noted_pid;
    pf_tls_t *t = &pf_tls;
    if (t->guard || !__atomic_load_n(&pf_cfg.enabled, __ATOMIC_ACQUIRE))
        return;
    if ((uint32_t)syscall(SYS_getpid) == pf_cfg.pid && pf_recorder_thread_has_chunk(t))
        mark_exec(t, argv);
    child_t c;
    if (judge_child(&c, path, argv, envp, search) < 0)
        return;
    uint32_t pid = (uint32_t)syscall(SYS_getpid);
    if (pid != pf_cfg.pid) {
        note_vfork_exec(t, pid, &c);
    } else if (c.flags && self_noted_pid != pid) {
        self_noted_pid = pid;
        note_start(PF_SPAWN_PROCESS, pid, pf_now_ns(), &c);
    }
}

#define REAL_SPAWN(name) (__atomic_load_n(&real.name, __ATOMIC_ACQUIRE) ? (void)0 : pf_hooks_resolve_all(), real.name)

PF_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    uint64_t t0 = start_time();
    pf_watch_spawning = 1;
    void *masked = pf_watch_masked_birth(attr, &fn, &arg);
    int rc = REAL_SPAWN(pthread_create)(th, attr, fn, arg);
    pf_watch_spawning = 0;
    if (rc != 0 && masked)
        pf_watch_masked_unborn(masked);
    if (rc == 0 && t0)
        note_start(PF_SPAWN_THREAD, (uint64_t)*th, t0, &plain_child);
    return rc;
}

PF_EXPORT pid_t fork(void)
{
    uint64_t t0 = start_time();
    pf_watch_spawning = 1;
    pid_t pid = REAL_SPAWN(fork)();
    pf_watch_spawning = 0;      /* in the child too */
    if (pid > 0 && t0)
        note_start(PF_SPAWN_PROCESS, (uint64_t)pid, t0, &plain_child);
    return pid;
}

/* posix_spawn(p) returned rc, having started *pid when rc is 0. */
static int after_posix_spawn(int rc, const pid_t *pid, uint64_t t0, const child_t *c)
{
    if (rc == 0 && pid && t0)
        note_start(PF_SPAWN_PROCESS, (uint64_t)*pid, t0, c);
    return rc;
}

PF_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                          const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    uint64_t t0 = start_time();
    child_t c = plain_child;
    if (t0)
        judge_child(&c, path, argv, envp, 0);
    pf_watch_spawning = 1;
    int rc = REAL_SPAWN(posix_spawn)(pid, path, fa, attr, argv, envp);
    pf_watch_spawning = 0;
    return after_posix_spawn(rc, pid, t0, &c);
}

PF_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    uint64_t t0 = start_time();
    child_t c = plain_child;
    if (t0)
        judge_child(&c, file, argv, envp, 1);
    pf_watch_spawning = 1;
    int rc = REAL_SPAWN(posix_spawnp)(pid, file, fa, attr, argv, envp);
    pf_watch_spawning = 0;
    return after_posix_spawn(rc, pid, t0, &c);
}

PF_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    note_exec(path, argv, envp, 0);
    return REAL_SPAWN(execve)(path, argv, envp);
}

PF_EXPORT int execv(const char *path, char *const argv[])
{
    note_exec(path, argv, environ, 0);
    return REAL_SPAWN(execv)(path, argv);
}

PF_EXPORT int execvp(const char *file, char *const argv[])
{
    note_exec(file, argv, environ, 1);
    return REAL_SPAWN(execvp)(file, argv);
}

PF_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    note_exec(file, argv, envp, 1);
    return REAL_SPAWN(execvpe)(file, argv, envp);
}

PF_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    note_exec(argv[0], argv, envp, 0);   /* the program's file name, as its caller gave it */
    return REAL_SPAWN(fexecve)(fd, argv, envp);
}

PF_EXPORT int system(const char *command)
{
    uint64_t t0 = command ? start_time() : 0;   /* system(NULL) only asks whether a shell exists */
    if (t0) {
        child_t c = plain_child;
        char *const argv[] = {"sh", "-c", (char *)command, NULL};
        judge_child(&c, "/bin/sh", argv, environ, 0);
        note_start(PF_SPAWN_PROCESS, 0, t0, &c);
    }
    return REAL_SPAWN(system)(command);
}
