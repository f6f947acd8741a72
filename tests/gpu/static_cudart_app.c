/* A program linked against the CUDA runtime statically (libcudart_static.a), as CuPy's wheels are: its
 * runtime reaches the driver only through cuGetProcAddress. One cudaMalloc starts it up. */
#include <stddef.h>
#include <stdio.h>

int cudaMalloc(void **p, size_t n);     /* the runtime's own, linked in */

int main(void)
{
    void *p = NULL;
    printf("cudaMalloc -> %d\n", cudaMalloc(&p, 1 << 20));
    return 0;
}
