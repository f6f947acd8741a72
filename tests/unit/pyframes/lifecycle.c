/* lifecycle.c - LD_PRELOAD helper: calls a frame reader where pyflow's runtime does, outside the
 * interpreter's life. Its constructor runs before python's main (no runtime yet) and its destructor after
 * exit() (after Py_FinalizeEx). Each writes one line to fd 2: "pf-lifecycle <when> rc=<capture> fin=<n>".
 * The reader's path comes from PF_LIFECYCLE_READER. No CPython header: it reaches Python only through the
 * reader, exactly like the runtime.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pf_pyframes.h"

static const pf_pyframes_api_t *api;

static void say(const char *when)
{
    char line[160];
    int len;
    if (!api) {
        len = snprintf(line, sizeof line, "pf-lifecycle %s no-reader\n", when);
    } else {
        pf_pyframe_t frames[16];
        int truncated = 0;
        int rc = api->capture(frames, 16, &truncated);
        len = snprintf(line, sizeof line, "pf-lifecycle %s rc=%d fin=%d\n", when, rc, api->is_finalizing());
    }
    if (write(2, line, (size_t)len) < 0)
        _exit(5);
}

__attribute__((constructor)) static void lifecycle_start(void)
{
    const char *path = getenv("PF_LIFECYCLE_READER");
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    pf_pyframes_entry_fn entry = h ? (pf_pyframes_entry_fn)dlsym(h, PF_PYFRAMES_ENTRY) : NULL;
    api = entry ? entry() : NULL;
    say("before-main");
}

__attribute__((destructor)) static void lifecycle_end(void)
{
    say("after-exit");
}
