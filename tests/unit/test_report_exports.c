/* The pieces of the exports and of `pyflow diff` that stand alone: the JSON reader (strict, with the byte
 * offset of what it refuses), the protobuf wire writer (checked against the encodings protobuf's
 * documentation gives), and --fail-on conditions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pf_diff.h"
#include "pf_model_int.h"
#include "pf_json_read_int.h"
#include "pf_protobuf_int.h"

static void test_json_reads_a_document(void **state)
{
    (void)state;
    const char *text = " {\"a\": [1, -2.5e3, true, false, null], \"s\": \"\\u00e9\\ud83d\\ude00\\n\\\"\", \"o\": {}} ";
    pf_jv_t v;
    char err[200];
    assert_int_equal(pf_jv_parse(text, strlen(text), &v, err, sizeof err), 0);
    const pf_jv_t *a = pf_jv_get(&v, "a");
    assert_non_null(a);
    assert_int_equal(a->kind, PF_JV_ARRAY);
    assert_int_equal(a->n, 5);
    assert_true(a->items[1].number == -2500.0);
    assert_int_equal(a->items[2].kind, PF_JV_BOOL);
    assert_true(a->items[2].number == 1);
    assert_int_equal(a->items[4].kind, PF_JV_NULL);
    assert_string_equal(pf_jv_str(&v, "s"), "\xc3\xa9\xf0\x9f\x98\x80\n\"");
    assert_int_equal(pf_jv_get(&v, "o")->kind, PF_JV_OBJECT);
    assert_null(pf_jv_get(&v, "missing"));
    assert_true(pf_jv_num(&v, "s") == 0);    /* not a number: 0 */
    pf_jv_free(&v);
}

static void expect_refused(const char *text, const char *why)
{
    pf_jv_t v;
    char err[200] = "";
    assert_int_equal(pf_jv_parse(text, strlen(text), &v, err, sizeof err), -1);
    if (!strstr(err, why))
        fail_msg("%s: got \"%s\", expected \"%s\"", text, err, why);
    assert_non_null(strstr(err, "at byte "));
}

static void test_json_refuses_malformed(void **state)
{
    (void)state;
    expect_refused("{\"a\": 1,}", "expected a string key");
    expect_refused("[1, 2", "expected ',' or ']'");
    expect_refused("\"abc", "unterminated string");
    expect_refused("\"a\\qb\"", "invalid escape");
    expect_refused("\"\\u12G4\"", "invalid \\u escape");
    expect_refused("{} x", "trailing data");
    expect_refused("tru", "invalid JSON value");
    expect_refused("1.2.3", "invalid number");
    expect_refused("", "unexpected end");
    char deep[1201] = "";
    memset(deep, '[', 600);
    memset(deep + 600, ']', 600);
    deep[1200] = '\0';
    expect_refused(deep, "nested too deeply");  /* not a stack overflow */
}

static void expect_bytes(const pf_pb_t *b, const uint8_t *want, size_t n)
{
    assert_int_equal(b->len, n);
    assert_memory_equal(b->data, want, n);
}

static void test_protobuf_wire(void **state)
{
    (void)state;
    pf_pb_t b = {0};
    pf_pb_uint(&b, 1, 150);     /* protobuf's own example: 08 96 01 */
    expect_bytes(&b, (const uint8_t[]){0x08, 0x96, 0x01}, 3);
    pf_pb_free(&b);
    pf_pb_string(&b, 2, "testing");     /* 12 07 74 65 73 74 69 6e 67 */
    expect_bytes(&b, (const uint8_t[]){0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g'}, 9);
    pf_pb_free(&b);
    pf_pb_packed(&b, 4, (const uint64_t[]){3, 270, 86942}, 3);     /* 22 06 03 8E 02 9E A7 05 */
    expect_bytes(&b, (const uint8_t[]){0x22, 0x06, 0x03, 0x8E, 0x02, 0x9E, 0xA7, 0x05}, 8);
    pf_pb_free(&b);
    pf_pb_varint(&b, UINT64_MAX);   /* ten bytes, as a negative int64 */
    assert_int_equal(b.len, 10);
    assert_int_equal(b.data[9], 0x01);
    pf_pb_free(&b);
    pf_pb_t inner = {0};
    pf_pb_uint(&inner, 1, 0);
    pf_pb_message(&b, 3, &inner);   /* 1a 02 08 00 */
    expect_bytes(&b, (const uint8_t[]){0x1a, 0x02, 0x08, 0x00}, 4);
    pf_pb_free(&inner);
    pf_pb_free(&b);
}

static void test_fail_on_conditions(void **state)
{
    (void)state;
    pf_diff_cond_t c;
    char err[300];
    assert_int_equal(pf_diff_parse_cond("peak:+10%", &c, err, sizeof err), 0);
    assert_int_equal(c.measure, PF_DM_PEAK);
    assert_true(c.percent && c.limit == 10);
    assert_int_equal(pf_diff_parse_cond("leaked:+1MB", &c, err, sizeof err), 0);
    assert_true(c.measure == PF_DM_LEAKED && !c.percent && c.limit == 1e6);
    assert_int_equal(pf_diff_parse_cond("allocated:2MiB", &c, err, sizeof err), 0);
    assert_true(c.measure == PF_DM_ALLOC && c.limit == 2 << 20);
    assert_int_equal(pf_diff_parse_cond("redundant:+0", &c, err, sizeof err), 0);
    assert_true(c.measure == PF_DM_REDUNDANT && c.limit == 0);
    assert_int_equal(pf_diff_parse_cond("peak", &c, err, sizeof err), -1);
    assert_int_equal(pf_diff_parse_cond("speed:+1", &c, err, sizeof err), -1);
    assert_int_equal(pf_diff_parse_cond("peak:+x", &c, err, sizeof err), -1);
    assert_int_equal(pf_diff_parse_cond("peak:+1XB", &c, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown unit XB"));

    pf_diff_t d = {0};
    d.base.total[PF_DM_PEAK] = 1000;
    d.new_.total[PF_DM_PEAK] = 1100;
    pf_diff_parse_cond("peak:+10%", &c, err, sizeof err);
    assert_false(pf_diff_cond_broken(&d, &c));     /* exactly +10%: within */
    d.new_.total[PF_DM_PEAK] = 1101;
    assert_true(pf_diff_cond_broken(&d, &c));
    pf_diff_parse_cond("redundant:+0", &c, err, sizeof err);
    assert_false(pf_diff_cond_broken(&d, &c));     /* 0 -> 0 */
    d.new_.total[PF_DM_REDUNDANT] = 1;
    assert_true(pf_diff_cond_broken(&d, &c));
    pf_diff_parse_cond("leaked:+5%", &c, err, sizeof err);
    d.new_.total[PF_DM_LEAKED] = 1;                /* from nothing: any growth is more than 5% */
    assert_true(pf_diff_cond_broken(&d, &c));
}

static void note(pf_model_t *m, const char *label)
{
    pf_tests_note(m, label, strlen(label));
}

static void test_pytest_result_labels(void **state)
{
    (void)state;
    pf_model_t m;
    memset(&m, 0, sizeof m);
    note(&m, "pytest-result\t100\t200\t300\t4\t5\tlimit_memory\ttests/t.py::test_a[x\ty]");
    note(&m, "pytest-result\t1\t2\t3\t0\t0\t-\tt.py::b");
    note(&m, "test-start t.py::b");                         /* another label: not a result */
    note(&m, "pytest-result\t1\t2\tthree\t0\t0\t-\tt.py::c");  /* malformed: left out */
    note(&m, "pytest-result\t1\t2\t3\t0\t0\t-\t");          /* no node id: left out */
    assert_int_equal(m.n_tests, 2);
    assert_string_equal(m.tests[0].nodeid, "tests/t.py::test_a[x\ty]");   /* the id is the rest */
    assert_true(m.tests[0].alloc_python == 100 && m.tests[0].alloc_native == 200 && m.tests[0].peak == 300);
    assert_true(m.tests[0].leaked_python == 4 && m.tests[0].leaked_native == 5);
    assert_string_equal(m.tests[0].failed_limit, "limit_memory");
    assert_string_equal(m.tests[1].failed_limit, "");
    pf_tests_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_reads_a_document),
        cmocka_unit_test(test_json_refuses_malformed),
        cmocka_unit_test(test_protobuf_wire),
        cmocka_unit_test(test_fail_on_conditions),
        cmocka_unit_test(test_pytest_result_labels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
