/* Unit tests for report/pf_symbols.c on real ELF files: this process's own mappings are turned into the
 * module list a profile would carry (dl_iterate_phdr, executable PT_LOAD segments, as the runtime's
 * PF_REC_MODULE records), and known addresses must come back with their names: getpid in libc (.dynsym
 * or .symtab), a static function of this test (.symtab only), and an address outside every module. */
#include <dlfcn.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "pf_symbols_int.h"

typedef struct mods {
    pf_symbols_module_t m[256];
    char paths[256][512];
    size_t n;
} mods_t;

static int add_object(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)size;
    mods_t *ms = ctx;
    const char *path = info->dlpi_name;
    char self[512];
    if (!path || !path[0]) {    /* the main program */
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
            return 0;
        self[n] = '\0';
        path = self;
    }
    for (int i = 0; i < info->dlpi_phnum && ms->n < 256; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        snprintf(ms->paths[ms->n], sizeof ms->paths[ms->n], "%s", path);
        ms->m[ms->n] = (pf_symbols_module_t){info->dlpi_addr + ph->p_vaddr, info->dlpi_addr + ph->p_vaddr + ph->p_memsz,
                                             info->dlpi_addr, ms->paths[ms->n]};
        ms->n++;
    }
    return 0;
}

__attribute__((noinline)) static int pf_test_marker_function(int x)
{
    return x * 3 + 1;
}

static void test_stack_of_real_addresses(void **state)
{
    (void)state;
    static mods_t ms;
    dl_iterate_phdr(add_object, &ms);
    assert_true(ms.n >= 2);
    uint64_t ips[] = {
        (uint64_t)(uintptr_t)getpid,                            /* innermost: the address itself */
        (uint64_t)(uintptr_t)pf_test_marker_function + 4,       /* a return address inside the function */
        (uint64_t)(uintptr_t)getpid + 1,                        /* a return address just after its start */
        0x10,                                                   /* outside every module */
    };
    char *names[4];
    pf_symbols_t *sy = pf_symbols_new();
    assert_int_equal(pf_symbols_stack(sy, ms.m, ms.n, ips, 4, names), 4);
    if (!strstr(names[0], "getpid (libc"))
        fail_msg("getpid resolved as %s", names[0]);
    if (!strstr(names[1], "pf_test_marker_function (test_report_symbols)"))
        fail_msg("the test's own static function resolved as %s", names[1]);
    if (!strstr(names[2], "getpid (libc"))
        fail_msg("a return address after getpid resolved as %s", names[2]);
    assert_string_equal(names[3], "0x10 (?)");
    for (int i = 0; i < 4; i++)
        free(names[i]);
    /* the same table again (cached) and an unreadable library */
    char one[256];
    pf_symbols_name(sy, "/nonexistent/libgone.so.1", 0xabc, one, sizeof one);
    assert_string_equal(one, "0xabc (libgone.so.1)");
    pf_symbols_free(sy);
    assert_int_equal(pf_test_marker_function(1), 4);
}

/* A file that is not ELF, and one that is a truncated ELF header: no symbols, no crash. */
static void test_hostile_files(void **state)
{
    (void)state;
    char path[] = "/tmp/pf-sym-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static const unsigned char elf_head[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
    assert_int_equal(write(fd, elf_head, sizeof elf_head), (ssize_t)sizeof elf_head);
    unsigned char junk[4096];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)(i * 131 + 7);
    assert_int_equal(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
    close(fd);
    pf_symbols_t *sy = pf_symbols_new();
    char name[256];
    pf_symbols_name(sy, path, 0x40, name, sizeof name);
    assert_non_null(strstr(name, "0x40 ("));
    pf_symbols_free(sy);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stack_of_real_addresses),
        cmocka_unit_test(test_hostile_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
