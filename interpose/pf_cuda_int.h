/* pf_cuda_int.h - what the CUDA hooks (pf_hooks_cuda.c) and the lookup of the real CUDA functions behind
 * them (pf_cuda_lookup.c) share: the hooked functions, pyflow's own definitions of them, the real ones. */
#ifndef PF_CUDA_INT_H
#define PF_CUDA_INT_H

#include "pf_hooks_int.h"

typedef int pf_cuda_status_t;       /* cudaError_t / CUresult: 0 = success */
typedef unsigned long long pf_cudeviceptr_t;

/* Every hooked function. Adding one: a line here, its hook in pf_hooks_cuda.c, and (for a driver function
 * reachable by cuGetProcAddress) a line in driver_entry's table there. */
#define PF_CUDA_FNS(X)                                                                                       \
    X(cudaMalloc) X(cudaFree) X(cudaMallocManaged) X(cudaMallocHost) X(cudaHostAlloc) X(cudaFreeHost)        \
    X(cudaMallocAsync) X(cudaFreeAsync) X(cudaMemcpy) X(cudaMemcpyAsync) X(cudaGetDriverEntryPoint)          \
    X(cudaGetDriverEntryPointByVersion) X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemAllocManaged)                \
    X(cuMemAllocAsync) X(cuMemFreeAsync) X(cuMemAllocHost_v2) X(cuMemHostAlloc) X(cuMemFreeHost)             \
    X(cuMemcpy) X(cuMemcpyAsync) X(cuMemcpyHtoD_v2) X(cuMemcpyDtoH_v2) X(cuMemcpyDtoD_v2)                    \
    X(cuMemcpyHtoDAsync_v2) X(cuMemcpyDtoHAsync_v2) X(cuMemcpyDtoDAsync_v2) X(cuGetProcAddress)             \
    X(cuGetProcAddress_v2) X(cuMemMap) X(cuMemUnmap) X(cudaMemcpy2D) X(cudaMemcpy2DAsync) X(cuMemcpy2D_v2)         \
    X(cuMemcpy2DAsync_v2) X(cudaMemcpyPeer) X(cudaMemcpyPeerAsync) X(cuMemcpyPeer) X(cuMemcpyPeerAsync)      \
    X(cudaMallocFromPoolAsync) X(cuMemAllocFromPoolAsync) X(cudaMallocPitch) X(cuMemAllocPitch_v2)          \
    X(cuMemcpy2DUnaligned_v2) X(cudaMemcpy3D) X(cudaMemcpy3DAsync) X(cuMemcpy3D_v2) X(cuMemcpy3DAsync_v2)    \
    /* the per-thread-default-stream variants of the stream-ordered ones */                                 \
    X(cudaMemcpy_ptds) X(cudaMemcpyAsync_ptsz) X(cudaMemcpy2D_ptds) X(cudaMemcpy2DAsync_ptsz)               \
    X(cudaMallocAsync_ptsz) X(cudaFreeAsync_ptsz) X(cudaMallocFromPoolAsync_ptsz) X(cuMemcpy_ptds)           \
    X(cuMemcpyAsync_ptsz) X(cuMemcpyHtoD_v2_ptds) X(cuMemcpyDtoH_v2_ptds) X(cuMemcpyDtoD_v2_ptds)            \
    X(cuMemcpyHtoDAsync_v2_ptsz) X(cuMemcpyDtoHAsync_v2_ptsz) X(cuMemcpyDtoDAsync_v2_ptsz)                   \
    X(cuMemcpy2D_v2_ptds) X(cuMemcpy2DUnaligned_v2_ptds) X(cuMemcpy2DAsync_v2_ptsz) X(cuMemcpyPeer_ptds)     \
    X(cuMemcpyPeerAsync_ptsz) X(cuMemAllocAsync_ptsz) X(cuMemFreeAsync_ptsz) X(cuMemAllocFromPoolAsync_ptsz) \
    X(cudaMemcpy3D_ptds) X(cudaMemcpy3DAsync_ptsz) X(cuMemcpy3D_v2_ptds) X(cuMemcpy3DAsync_v2_ptsz)

#define PF_X_ENUM(n) F_##n,
enum pf_cuda_fn { PF_CUDA_FNS(PF_X_ENUM) F_COUNT };

/* Each hooked function's name (pf_cuda_lookup.c) and pyflow's own definition of it (pf_hooks_cuda.c). */
extern const char *const pf_cuda_fn_names[F_COUNT] PF_HIDDEN;
extern void *const pf_cuda_hooks[F_COUNT] PF_HIDDEN;

/* The real definition of fn: the one a lookup saw, else the first in a loaded object other than pyflow;
 * NULL when no loaded object defines it. Never a hook. */
void *pf_cuda_real(enum pf_cuda_fn fn) PF_HIDDEN;
/* Remembers a real definition that a lookup found (the first one wins, as the loader's would). */
void pf_cuda_remember_real(enum pf_cuda_fn fn, void *f) PF_HIDDEN;

#endif /* PF_CUDA_INT_H */
