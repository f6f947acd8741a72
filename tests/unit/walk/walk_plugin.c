/* walk_plugin.c - a shared object the test dlopens: its rules come from an .eh_frame loaded after start. */
#include <alloca.h>
#include <string.h>

#include "walk_chain.h"

/* Built twice (walk_plugin, walk_plugin_narrow), the same code but for plugin_step's frame size: loaded one
 * after the other at the same address, the same return address needs another rule. */
#ifndef PLUGIN_PAD
#define PLUGIN_PAD 56
#endif

__attribute__((noinline)) int plugin_step(const walk_chain_t *c, int i)
{
    volatile char pad[PLUGIN_PAD];
    pad[0] = 4;
    return c->steps[i + 1](c, i + 1) + pad[0];
}

__attribute__((noinline)) int plugin_alloca_step(const walk_chain_t *c, int i)
{
    size_t n = 32 + (size_t)(c->depth & 0x7f) * 8;
    char *p = alloca(n);
    memset(p, 5, n);
    __asm__ volatile("" : : "r"(p) : "memory");
    return c->steps[i + 1](c, i + 1) + p[0];
}
