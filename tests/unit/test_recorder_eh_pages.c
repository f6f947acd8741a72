/* Unit tests for giving back the call frame information pages (recorder/pf_eh_pages.c). A fake object is a
 * private read-only mapping of a temporary file with program headers made up here: its .eh_frame_hdr 6 KiB
 * in, its read-only segment 64 KiB long, so its span is the pages from 8 KiB to 64 KiB. Whether a page is in
 * the page tables is read from /proc/self/pagemap (mincore tells the page cache, not the mapping). */
#include <fcntl.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "pf_eh_pages.h"

#define OBJ_BYTES (64u * 1024u)
#define HDR_AT 0x1800u

static uint8_t *obj;            /* the fake object's mapping */
static ElfW(Dyn) dynamic[4];    /* its dynamic section, when a case gives it one */

static int first_subs(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(unsigned long long *)arg = info->dlpi_subs;
    return 1;   /* the same count in every object's entry */
}

/* The loader's count of objects removed so far. */
static unsigned long long loader_subs(void)
{
    unsigned long long subs = ~0ull;
    dl_iterate_phdr(first_subs, &subs);
    return subs;
}

static int present(const void *addr)
{
    int fd = open("/proc/self/pagemap", O_RDONLY);
    uint64_t word = 0;
    long page = sysconf(_SC_PAGESIZE);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &word, 8, (off_t)((uintptr_t)addr / (uintptr_t)page * 8)), 8);
    close(fd);
    return (int)(word >> 63);
}

static void touch_all(void)
{
    for (uint32_t at = 0; at < OBJ_BYTES; at += 4096)
        (void)*(volatile uint8_t *)(obj + at);
}

static int setup(void **state)
{
    (void)state;
    char path[] = "/tmp/pf-eh-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, OBJ_BYTES) != 0)
        return -1;
    unlink(path);
    obj = mmap(NULL, OBJ_BYTES, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    pf_eh_pages_reset();
    return obj == MAP_FAILED ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    munmap(obj, OBJ_BYTES);
    pf_eh_pages_reset();
    return 0;
}

/* Files the fake object with its read-only segment, its .eh_frame_hdr and any extra program header. */
static void file_object(uint32_t load_flags, const ElfW(Phdr) *extra, unsigned long long subs)
{
    ElfW(Phdr) ph[3] = {
        {.p_type = PT_LOAD, .p_flags = load_flags, .p_vaddr = 0, .p_filesz = OBJ_BYTES, .p_memsz = OBJ_BYTES},
        {.p_type = PT_GNU_EH_FRAME, .p_flags = PF_R, .p_vaddr = HDR_AT, .p_filesz = 64, .p_memsz = 64},
    };
    int n = 2;
    if (extra)
        ph[n++] = *extra;
    struct dl_phdr_info info = {.dlpi_addr = (ElfW(Addr))(uintptr_t)obj, .dlpi_phdr = ph, .dlpi_phnum = (ElfW(Half))n,
                                .dlpi_subs = subs};
    pf_eh_pages_add(&info, sizeof info);
}

/* One unwinder read at ip. */
static void read_at(uint64_t ip)
{
    pf_eh_pages_read(&ip, 1);
}

static void quiet_spell(void)
{
    for (uint32_t i = 0; i < PF_EH_PAGES_QUIET_TICKS + 1; i++)
        pf_eh_pages_tick();
}

static void test_span_given_back_after_quiet_spell(void **state)
{
    (void)state;
    file_object(PF_R, NULL, loader_subs());
    assert_int_equal(pf_eh_pages_spans(), 1);
    touch_all();
    read_at((uint64_t)(uintptr_t)obj + 0x10);
    quiet_spell();
    assert_int_equal(pf_eh_pages_released(), 1);
    assert_true(present(obj + 0x1000));             /* the page .eh_frame_hdr starts in is shared: kept */
    for (uint32_t at = 0x2000; at < OBJ_BYTES; at += 4096)
        assert_false(present(obj + at));
    /* read again: the pages come back from the file, and go again after the next quiet spell */
    touch_all();
    read_at((uint64_t)(uintptr_t)obj + 0x10);
    quiet_spell();
    assert_int_equal(pf_eh_pages_released(), 2);
    assert_false(present(obj + 0x8000));
    /* a read of an address in no filed object marks nothing */
    read_at(0x1000);
    quiet_spell();
    assert_int_equal(pf_eh_pages_released(), 2);
}

static void test_spans_that_could_be_written_are_not_filed(void **state)
{
    (void)state;
    file_object(PF_R | PF_W, NULL, loader_subs());     /* a writable segment */
    ElfW(Phdr) relro = {.p_type = PT_GNU_RELRO, .p_vaddr = 0x8000, .p_memsz = 0x1000};
    file_object(PF_R, &relro, loader_subs());
    dynamic[0] = (ElfW(Dyn)){.d_tag = DT_FLAGS, .d_un.d_val = DF_TEXTREL};
    dynamic[1] = (ElfW(Dyn)){.d_tag = DT_NULL};
    ElfW(Phdr) dyn = {.p_type = PT_DYNAMIC, .p_vaddr = (ElfW(Addr))((uintptr_t)dynamic - (uintptr_t)obj)};
    file_object(PF_R, &dyn, loader_subs());
    assert_int_equal(pf_eh_pages_spans(), 0);
    dynamic[0] = (ElfW(Dyn)){.d_tag = DT_TEXTREL};
    file_object(PF_R, &dyn, loader_subs());
    assert_int_equal(pf_eh_pages_spans(), 0);
    dynamic[0] = (ElfW(Dyn)){.d_tag = DT_FLAGS, .d_un.d_val = DF_BIND_NOW};   /* no text relocations */
    file_object(PF_R, &dyn, loader_subs());
    assert_int_equal(pf_eh_pages_spans(), 1);
    file_object(PF_R, &dyn, loader_subs());     /* the same object from a later scan: filed once */
    assert_int_equal(pf_eh_pages_spans(), 1);
}

static void test_nothing_given_back_while_or_after_unloading(void **state)
{
    (void)state;
    file_object(PF_R, NULL, loader_subs());
    pf_eh_pages_unloading(1, 0);                /* a dlclose under way */
    touch_all();
    quiet_spell();
    assert_int_equal(pf_eh_pages_released(), 0);
    assert_true(present(obj + 0x8000));
    pf_eh_pages_unloading(0, 0);                /* it removed nothing: the spans go at the next spell */
    quiet_spell();
    assert_int_equal(pf_eh_pages_released(), 1);
    pf_eh_pages_unloading(1, 0);
    pf_eh_pages_unloading(0, 1);                /* it removed an object: never again */
    touch_all();
    read_at((uint64_t)(uintptr_t)obj + 0x10);
    quiet_spell();
    assert_int_equal(pf_eh_pages_released(), 1);
    assert_true(present(obj + 0x8000));
}

static void test_removal_seen_by_the_loader_count(void **state)
{
    (void)state;
    file_object(PF_R, NULL, loader_subs() + 1);     /* filed when the loader had removed one more: stale */
    touch_all();
    quiet_spell();
    assert_int_equal(pf_eh_pages_released(), 0);
    assert_true(present(obj + 0x8000));
}

static void test_given_back_at_once_when_finalizing(void **state)
{
    (void)state;
    file_object(PF_R, NULL, loader_subs());
    quiet_spell();
    assert_int_equal(pf_eh_pages_released(), 1);
    touch_all();
    read_at((uint64_t)(uintptr_t)obj + 0x10);
    pf_eh_pages_read_done();                    /* not finalizing: waits for a quiet spell */
    assert_int_equal(pf_eh_pages_released(), 1);
    pf_eh_pages_finalizing();
    pf_eh_pages_read_done();
    assert_int_equal(pf_eh_pages_released(), 2);
    assert_false(present(obj + 0x8000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_span_given_back_after_quiet_spell, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spans_that_could_be_written_are_not_filed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nothing_given_back_while_or_after_unloading, setup, teardown),
        cmocka_unit_test_setup_teardown(test_removal_seen_by_the_loader_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_given_back_at_once_when_finalizing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
