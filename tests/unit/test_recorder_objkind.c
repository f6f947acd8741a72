/* Unit tests for recorder/pf_objkind: objects by their type word, dict keys tables by their header (3.8 and
 * 3.11 layouts), list item arrays by the objects they point at, a keys table found from its entries; and
 * blocks that are none of these, including pointers to unmapped memory, which must not fault. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "pf_objkind.h"
#include "pf_objtable.h"

pf_config_t pf_cfg;     /* the pid the list test's reads name (the runtime keeps it) */

/* The interpreter's type objects, as dlsym finds them in a Python process (the test exports its symbols).
 * Each is a fake type object: its type word (at 8) is PyType_Type, as a real type's is. */
#define FAKE_TYPE(name) __attribute__((visibility("default"))) uintptr_t name[4]
FAKE_TYPE(PyUnicode_Type);
FAKE_TYPE(PyBytes_Type);
FAKE_TYPE(PyByteArray_Type);
FAKE_TYPE(PyList_Type);
FAKE_TYPE(PyDict_Type);
FAKE_TYPE(PyTuple_Type);
FAKE_TYPE(PySet_Type);
FAKE_TYPE(PyFrozenSet_Type);
FAKE_TYPE(PyLong_Type);
FAKE_TYPE(PyFloat_Type);
FAKE_TYPE(PyType_Type);

#include "test_rec_memcpy.h"  /* the recorder's memcpy, here a plain loop */

static void set_types(void)
{
    uintptr_t *types[] = {PyUnicode_Type, PyBytes_Type, PyByteArray_Type, PyList_Type, PyDict_Type, PyTuple_Type,
                          PySet_Type,     PyFrozenSet_Type, PyLong_Type, PyFloat_Type, PyType_Type};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        types[i][1] = (uintptr_t)PyType_Type;
}

static pf_objinfo_t block(void *p, uint64_t size, int domain)
{
    return (pf_objinfo_t){.addr = (uintptr_t)p, .size = size, .domain = (uint32_t)domain};
}

static void test_objects_by_type_word(void **state)
{
    (void)state;
    set_types();
    pf_objkind_init(0x030b02f0);
    uintptr_t obj[8] = {1, (uintptr_t)PyUnicode_Type};
    pf_objinfo_t o = block(obj, sizeof obj, PF_DOMAIN_PYOBJ);
    assert_int_equal(pf_objkind_of(&o), PF_OBJ_STR);
    assert_int_equal(pf_objkind_str_bytes(&o), PF_OBJ_STR);
    obj[1] = (uintptr_t)PyFloat_Type;
    assert_int_equal(pf_objkind_of(&o), PF_OBJ_FLOAT);
    assert_int_equal(pf_objkind_str_bytes(&o), PF_OBJ_UNKNOWN);
    /* a GC object: two words of the collector's header, then the reference count and the type */
    uintptr_t gc[8] = {0, 0, 1, (uintptr_t)PyList_Type};
    o = block(gc, sizeof gc, PF_DOMAIN_PYOBJ);
    assert_int_equal(pf_objkind_of(&o), PF_OBJ_LIST);
    gc[3] = (uintptr_t)PyFrozenSet_Type;
    assert_int_equal(pf_objkind_of(&o), PF_OBJ_SET);
    /* the same words in native memory are no object */
    o = block(gc, sizeof gc, PF_DOMAIN_MALLOC);
    gc[3] = (uintptr_t)PyList_Type;
    assert_int_equal(pf_objkind_of(&o), PF_OBJ_UNKNOWN);
}

/* Every kind by its type word, each on its own side of the collector's header only, and words near a
 * type's that are none (the kinds are looked up in a hashed table: pf_objkind.c). */
static void test_every_type_word(void **state)
{
    (void)state;
    set_types();
    pf_objkind_init(0x030b02f0);
    const struct { uintptr_t *type; pf_obj_kind_t kind; int gc; } types[] = {
        {PyUnicode_Type, PF_OBJ_STR, 0},  {PyBytes_Type, PF_OBJ_BYTES, 0}, {PyByteArray_Type, PF_OBJ_BYTEARRAY, 0},
        {PyLong_Type, PF_OBJ_INT, 0},     {PyFloat_Type, PF_OBJ_FLOAT, 0}, {PyList_Type, PF_OBJ_LIST, 1},
        {PyDict_Type, PF_OBJ_DICT, 1},    {PyTuple_Type, PF_OBJ_TUPLE, 1}, {PySet_Type, PF_OBJ_SET, 1},
        {PyFrozenSet_Type, PF_OBJ_SET, 1},
    };
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        uintptr_t obj[8] = {0};
        pf_objinfo_t o = block(obj, sizeof obj, PF_DOMAIN_PYOBJ);
        obj[types[i].gc ? 3 : 1] = (uintptr_t)types[i].type;
        assert_int_equal(pf_objkind_of(&o), types[i].kind);
        memset(obj, 0, sizeof obj);
        obj[types[i].gc ? 1 : 3] = (uintptr_t)types[i].type;     /* the other side: no object of that kind */
        assert_int_equal(pf_objkind_of(&o), PF_OBJ_UNKNOWN);
        for (int d = -16; d <= 16; d += 8) {
            if (d == 0)
                continue;
            memset(obj, 0, sizeof obj);
            obj[1] = obj[3] = (uintptr_t)types[i].type + (uintptr_t)(intptr_t)d;
            assert_int_equal(pf_objkind_of(&o), PF_OBJ_UNKNOWN);
        }
    }
    /* a GC header too short for a GC object's type word */
    uintptr_t small[3] = {0, 0, 1};
    pf_objinfo_t o = block(small, sizeof small, PF_DOMAIN_PYOBJ);
    assert_int_equal(pf_objkind_of(&o), PF_OBJ_UNKNOWN);
}

/* A 3.11+ keys table of 2^log2 slots, kind 0 (general, 24-byte entries) or 1 (unicode, 16), as
 * new_keys_object allocates it; *size gets the allocation's size. */
static unsigned char *keys_311(unsigned log2, unsigned kind, uint64_t *size)
{
    unsigned log2_bytes = log2 < 8 ? log2 : log2 < 16 ? log2 + 1 : log2 + 2;
    uint64_t usable = ((1ull << log2) << 1) / 3;
    *size = 32 + (1ull << log2_bytes) + (kind ? 16 : 24) * usable;
    unsigned char *k = calloc(1, *size);
    int64_t refcnt = 1, nentries = (int64_t)usable / 2, left = (int64_t)usable - nentries;
    memcpy(k, &refcnt, 8);
    k[8] = (unsigned char)log2;
    k[9] = (unsigned char)log2_bytes;
    k[10] = (unsigned char)kind;
    memcpy(k + 16, &left, 8);
    memcpy(k + 24, &nentries, 8);
    return k;
}

static void test_dict_keys_311(void **state)
{
    (void)state;
    set_types();
    pf_objkind_init(0x030b02f0);
    for (unsigned log2 = 3; log2 <= 17; log2 += 7)
        for (unsigned kind = 0; kind <= 1; kind++) {
            uint64_t size;
            unsigned char *k = keys_311(log2, kind, &size);
            pf_objinfo_t o = block(k, size, PF_DOMAIN_PYOBJ);
            assert_int_equal(pf_objkind_of(&o), PF_OBJ_DICT);
            o.domain = PF_DOMAIN_PYMEM;     /* 3.13 takes keys from PyMem_Malloc */
            assert_int_equal(pf_objkind_of(&o), PF_OBJ_DICT);
            o = block(k, size + 8, PF_DOMAIN_PYOBJ);   /* a size the header does not give */
            assert_int_equal(pf_objkind_of(&o), PF_OBJ_UNKNOWN);
            k[9]++;     /* index bytes that do not fit the slots */
            o = block(k, size, PF_DOMAIN_PYOBJ);
            assert_int_equal(pf_objkind_of(&o), PF_OBJ_UNKNOWN);
            free(k);
        }
    /* the 3.8 layout is not the 3.11 one */
    uint64_t size;
    unsigned char *k = keys_311(10, 0, &size);
    pf_objkind_init(0x030812f0);
    pf_objinfo_t o = block(k, size, PF_DOMAIN_PYOBJ);
    assert_int_equal(pf_objkind_of(&o), PF_OBJ_UNKNOWN);
    free(k);
}

static void test_dict_keys_38(void **state)
{
    (void)state;
    set_types();
    pf_objkind_init(0x030812f0);
    uint64_t slots = 1024, usable = (slots << 1) / 3, size = 40 + 2 * slots + 24 * usable;
    uint64_t *k = calloc(1, size);
    k[0] = 1;                   /* dk_refcnt */
    k[1] = slots;               /* dk_size */
    k[2] = 0x401000;            /* dk_lookup */
    k[3] = usable - 10;         /* dk_usable */
    k[4] = 10;                  /* dk_nentries */
    pf_objinfo_t o = block(k, size, PF_DOMAIN_PYOBJ);
    assert_int_equal(pf_objkind_of(&o), PF_OBJ_DICT);
    k[4] = usable + 1;          /* more entries than the table holds */
    assert_int_equal(pf_objkind_of(&o), PF_OBJ_UNKNOWN);
    free(k);
}

static void test_list_items(void **state)
{
    (void)state;
    set_types();
    pf_objkind_init(0x030b02f0);
    uintptr_t int_obj[4] = {1, (uintptr_t)PyLong_Type}, str_obj[4] = {1, (uintptr_t)PyUnicode_Type};
    /* a class whose type is a metaclass, whose type is type */
    uintptr_t meta[4] = {1, (uintptr_t)PyType_Type}, cls[4] = {1, (uintptr_t)meta}, inst[4] = {1, (uintptr_t)cls};
    uintptr_t *items = calloc(1, 1024);
    items[0] = (uintptr_t)int_obj;
    items[1] = (uintptr_t)inst;
    pf_objinfo_t o = block(items, 1024, PF_DOMAIN_PYMEM);
    assert_int_equal(pf_objkind_of(&o), PF_OBJ_LIST);
    items[1] = (uintptr_t)str_obj;
    assert_int_equal(pf_objkind_of(&o), PF_OBJ_LIST);
    /* a small array is not asked (pymalloc's blocks: the test costs system calls) */
    o = block(items, 256, PF_DOMAIN_PYMEM);
    assert_int_equal(pf_objkind_of(&o), PF_OBJ_UNKNOWN);
    /* in the object domain or native memory: no list's items */
    o = block(items, 1024, PF_DOMAIN_MALLOC);
    assert_int_equal(pf_objkind_of(&o), PF_OBJ_UNKNOWN);
    /* numbers, a pointer into unmapped memory, a pointer to a word that is no type: none fault */
    void *gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_ptr_not_equal(gone, MAP_FAILED);
    munmap(gone, 4096);
    uintptr_t plain[4] = {1, 12345};
    uintptr_t bad[][2] = {{3, 7}, {(uintptr_t)gone, (uintptr_t)int_obj}, {(uintptr_t)int_obj, (uintptr_t)plain},
                          {(uintptr_t)int_obj, 0}};
    o = block(items, 1024, PF_DOMAIN_PYMEM);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        items[0] = bad[i][0];
        items[1] = bad[i][1];
        assert_int_equal(pf_objkind_of(&o), PF_OBJ_UNKNOWN);
    }
    free(items);
}

static void test_keys_table_from_entries(void **state)
{
    (void)state;
    set_types();
    pf_objkind_init(0x030b02f0);
    pf_objtable_reset();
    assert_int_equal(pf_objtable_init(), 0);
    uint64_t size;
    unsigned char *k = keys_311(16, 0, &size);     /* 64 Ki slots, 4-byte indices: entries 256 KiB + 32 in */
    pf_objinfo_t o = block(k, size, PF_DOMAIN_PYOBJ);
    assert_int_equal(pf_objtable_insert(&o), 0);
    uintptr_t entries = (uintptr_t)k + 32 + (1u << 18);
    assert_int_equal(pf_objkind_at(entries), PF_OBJ_DICT);
    assert_int_equal(pf_objkind_at(entries + 24), PF_OBJ_UNKNOWN);     /* not where the entries start */
    assert_int_equal(pf_objkind_at((uintptr_t)k + 8), PF_OBJ_DICT);  /* in its first bytes: the table itself */
    pf_objtable_remove(o.addr, NULL);
    assert_int_equal(pf_objkind_at(entries), PF_OBJ_UNKNOWN);         /* untracked */
    free(k);
}

int main(void)
{
    pf_cfg.pid = (uint32_t)getpid();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_objects_by_type_word),
        cmocka_unit_test(test_every_type_word),
        cmocka_unit_test(test_dict_keys_311),
        cmocka_unit_test(test_dict_keys_38),
        cmocka_unit_test(test_list_items),
        cmocka_unit_test(test_keys_table_from_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
