/* Another LD_PRELOAD interposer, as a user may already have: it wraps getpid and finds the real one with
 * dlsym(RTLD_NEXT). pyflow interposes dlsym too; if it lost the caller (RTLD_NEXT is resolved relative to
 * the calling object), this would find itself and recurse forever. */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

__attribute__((constructor)) static void hello(void)
{
    fputs("next-preload: loaded\n", stderr);
}

pid_t getpid(void)
{
    pid_t (*next)(void) = (pid_t (*)(void))dlsym(RTLD_NEXT, "getpid");
    return next == getpid ? -1 : next();
}
