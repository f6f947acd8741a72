/* pf_hooks_dl.c - dlclose: when it really unloads an object (the loader's count of removals moved), the
 * fast native walk drops the unwind rules it keeps by address, which a library loaded later at the same
 * addresses would otherwise be walked with (recorder/pf_cfi.c), and the pages of call frame information
 * are no longer given back (recorder/pf_eh_pages.c: the range may hold another mapping). Everything else goes on to the next
 * dlclose. dlopen needs nothing here (new code's rules are read as its addresses are first met); it is
 * hooked only for page watches (pf_hooks_paths.c), passed on by a tail call so that glibc still searches
 * its caller's RUNPATH. */
#include <link.h>
#include <stddef.h>
#include <stdint.h>

#include "pf_hooks_int.h"

static int read_subs(struct dl_phdr_info *info, size_t size, void *arg)
{
    if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        return 1;   /* a loader without the counts: taken as a change */
    *(unsigned long long *)arg = info->dlpi_subs;
    return 1;       /* the counts are the same in every object's entry: the first is enough */
}

/* The loader's count of objects removed so far; ULLONG_MAX when it cannot be told. */
static unsigned long long objects_removed(void)
{
    unsigned long long subs = ~0ull;
    dl_iterate_phdr(read_subs, &subs);
    return subs;
}

PF_EXPORT int dlclose(void *handle)
{
    unsigned long long before = objects_removed();
    pf_recorder_code_unloading();
    int rc = pf_real.dlclose(handle);
    unsigned long long after = objects_removed();
    pf_recorder_code_unloaded(rc == 0 && (after != before || after == ~0ull));
    return rc;
}
