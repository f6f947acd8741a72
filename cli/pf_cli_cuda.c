/* pf_cli_cuda.c - `pyflow info`'s line on CUDA: whether this machine has a driver and GPUs, so a user
 * knows before a run whether the GPU columns can fill. It asks the driver itself (libcuda.so.1, as
 * frameworks load it), in the pyflow process, never in the profiled one: cuInit here costs a fraction of
 * a second once, and creates no context. */
#include <dlfcn.h>
#include <stdio.h>

#include "pf_cli_int.h"
#include "pf_watch.h"

typedef int (*pf_cu_int_fn)(int *);
typedef int (*pf_cu_init_fn)(unsigned);

void pf_cli_probe_cuda(pf_probe_t *p)
{
    p->name = "cuda";
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        p->status = PF_PROBE_SKIP;
        snprintf(p->detail, sizeof p->detail,
                 "no CUDA driver here (libcuda.so.1 not found): programs run without a GPU, GPU columns stay empty");
        return;
    }
    pf_cu_int_fn version = (pf_cu_int_fn)dlsym(h, "cuDriverGetVersion");
    pf_cu_init_fn init = (pf_cu_init_fn)dlsym(h, "cuInit");
    pf_cu_int_fn count = (pf_cu_int_fn)dlsym(h, "cuDeviceGetCount");
    int v = 0, n = 0, rc = 0;
    p->status = PF_PROBE_FAIL;
    if (!version || !init || !count)
        snprintf(p->detail, sizeof p->detail, "libcuda.so.1 lacks the driver's entry points: not a CUDA driver");
    else if (version(&v), (rc = init(0)) != 0)
        snprintf(p->detail, sizeof p->detail,
                 "driver %d.%d found, cuInit failed (CUresult %d): check nvidia-smi and the device nodes", v / 1000,
                 v % 1000 / 10, rc);
    else if ((rc = count(&n)) != 0 || n == 0)
        snprintf(p->detail, sizeof p->detail, "driver %d.%d found, no GPU (CUresult %d, %d devices)", v / 1000,
                 v % 1000 / 10, rc, n);
    else {
        p->status = PF_PROBE_OK;
        snprintf(p->detail, sizeof p->detail,
                 "driver %d.%d, %d GPU%s: allocations (cudaMalloc & co., pools, cuMemMap) and copies per line",
                 v / 1000, v % 1000 / 10, n, n == 1 ? "" : "s");
    }
    dlclose(h);
}
