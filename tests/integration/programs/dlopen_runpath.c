/* Two libraries for native.py's case_native_dlopen_runpath. Built with -DINNER: the library found only
 * through the other's RUNPATH. Built without: the library that dlopens it by bare name, which glibc
 * resolves through the RUNPATH of dlopen's caller (this library, as long as no wrapper stands in between). */
#include <dlfcn.h>

#ifdef INNER
int inner_value(void) { return 42; }
#else
int outer_value(void)
{
    void *h = dlopen("libpf_runpath_inner.so", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return -1;
    int (*f)(void) = (int (*)(void))dlsym(h, "inner_value");
    return f ? f() : -2;
}
#endif
