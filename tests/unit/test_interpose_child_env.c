/* Unit tests for interpose/pf_child_env.h: which environments profile a child, which programs run Python,
 * and the command line a SPAWN record keeps of an unprofiled child. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "pf_child_env.h"

static int entry_is_ours(const char *s)
{
    return pf_preload_entry_is_ours(s, strlen(s));
}

static void test_preload_entry(void **state)
{
    (void)state;
    assert_true(entry_is_ours("libpyflow.so"));
    assert_true(entry_is_ours("/opt/pyflow/lib/pyflow/libpyflow.so"));
    assert_false(entry_is_ours("/usr/lib/notlibpyflow.so"));   /* a name that only ends like ours */
    assert_false(entry_is_ours("/usr/lib/libpyflow.so.1"));
    assert_false(entry_is_ours("pyflow.so"));
    assert_false(pf_preload_entry_is_ours("/x/libpyflow.so:/y/libz.so", 6));
}

static void test_env_profiles(void **state)
{
    (void)state;
    char *kept[] = {"PATH=/usr/bin", "LD_PRELOAD=/usr/lib/libjemalloc.so.2:/opt/lib/libpyflow.so",
                    "PYFLOW_OUTPUT=/tmp/p.pflow", NULL};
    char *blank_separated[] = {"LD_PRELOAD=/a/liba.so /opt/lib/libpyflow.so", "PYFLOW_OUTPUT=/tmp/p", NULL};
    char *no_output[] = {"LD_PRELOAD=/opt/lib/libpyflow.so", NULL};
    char *empty_output[] = {"LD_PRELOAD=/opt/lib/libpyflow.so", "PYFLOW_OUTPUT=", NULL};
    char *other_preload[] = {"LD_PRELOAD=/usr/lib/libjemalloc.so.2", "PYFLOW_OUTPUT=/tmp/p", NULL};
    char *prefix_only[] = {"LD_PRELOAD_X=/opt/lib/libpyflow.so", "PYFLOW_OUTPUTX=/tmp/p", NULL};
    char *empty[] = {NULL};
    assert_true(pf_env_profiles(kept));
    assert_true(pf_env_profiles(blank_separated));
    assert_false(pf_env_profiles(no_output));
    assert_false(pf_env_profiles(empty_output));
    assert_false(pf_env_profiles(other_preload));
    assert_false(pf_env_profiles(prefix_only));
    assert_false(pf_env_profiles(empty));
    assert_false(pf_env_profiles(NULL));
}

/* Writes a file holding text into dir/name; returns its path (static). */
static const char *script(const char *dir, const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_program_is_python(void **state)
{
    (void)state;
    char dir[] = "/tmp/pf-child-env-XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_int_equal(pf_program_is_python("/usr/bin/python3", NULL), 1);
    assert_int_equal(pf_program_is_python("python3.11", NULL), 1);              /* by name, even without its file */
    assert_int_equal(pf_program_is_python("/venv/bin/python", NULL), 1);
    assert_int_equal(pf_program_is_python(script(dir, "tool", "#!/usr/bin/env python3\nimport sys\n"), NULL), 1);
    assert_int_equal(pf_program_is_python(script(dir, "tool2", "#! /opt/py/bin/python3.12 -u\n"), NULL), 1);
    assert_int_equal(pf_program_is_python(script(dir, "sh", "#!/bin/sh\n# python in a comment\n"), NULL), 0);
    assert_int_equal(pf_program_is_python(script(dir, "python3-config", "#!/bin/sh\necho -I/usr/include\n"), NULL), 0);
    /* a shell script: by the commands it runs */
    assert_int_equal(pf_program_is_python(script(dir, "runner", "#!/bin/sh\nset -e\nexec python3 -c 1\n"), NULL), 1);
    /* Ubuntu's /sbin/ldconfig, which ctypes.util.find_library runs: a ')' inside quotes once made the parse
     * stand still, in the vfork child of the program's subprocess call */
    alarm(10);
    assert_int_equal(pf_program_is_python(script(dir, "ldconfig",
        "#! /bin/sh\n\nif  test $# = 0 \\\n    && dpkg-trigger --check-supported 2>/dev/null\nthen\n"
        "\tif dpkg-trigger --no-await ldconfig; then\n"
        "\t\techo \"ldconfig: wrapper deferring update (trigger activated)\"\n\t\texit 0\n\tfi\nfi\n\n"
        "exec /sbin/ldconfig.real \"$@\"\n"), NULL), 0);
    alarm(0);
    assert_int_equal(pf_program_is_python(script(dir, "runner2", "#!/usr/bin/env -S bash -e\ncd /srv\n"
                                                                 "\"/opt/py/bin/python3.12\" job.py\n"), NULL), 1);
    assert_int_equal(pf_program_is_python(script(dir, "awk", "#!/usr/bin/awk -f\n{ python3 }\n"), NULL), 0);
    assert_int_equal(pf_program_is_python(script(dir, "python3.99", "\177ELF"), NULL), 1);
    assert_int_equal(pf_program_is_python(script(dir, "elf", "\177ELF"), NULL), 0);
    assert_int_equal(pf_program_is_python(script(dir, "empty", ""), NULL), 0);
    assert_int_equal(pf_program_is_python("git", NULL), 0);                      /* a bare name, not python's */
    errno = 1234;
    assert_int_equal(pf_program_is_python("/nonexistent/dir/tool", NULL), -1);  /* a PATH entry without it */
    assert_int_equal(errno, 1234);                                         /* exec's caller reads errno */
    assert_int_equal(pf_program_is_python(NULL, NULL), 0);
    const char *names[] = {"tool", "tool2", "sh", "python3-config", "runner", "ldconfig", "runner2", "awk", "python3.99",
                           "elf", "empty"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

static void test_launchers(void **state)
{
    (void)state;
    assert_true(pf_is_launcher("/bin/sh"));
    assert_true(pf_is_launcher("env"));
    assert_false(pf_is_launcher("/usr/bin/python3"));
    assert_false(pf_is_launcher("/usr/bin/shell"));
    /* valgrind runs its client with the environment it was given: `pyflow run valgrind python3 x.py` */
    assert_true(pf_is_launcher("/usr/bin/valgrind.bin"));
    char *valgrind_python[] = {"valgrind", "--tool=callgrind", "python3", "x.py", NULL};
    assert_true(pf_launches_python("/usr/bin/valgrind.bin", valgrind_python, NULL));
    char *sh_python[] = {"/bin/sh", "-c", "cd /srv && /usr/bin/python3 -m app", NULL};
    char *bash_lc[] = {"bash", "-lc", "python3.12 job.py", NULL};
    char *sh_grep[] = {"/bin/sh", "-c", "grep -r python .", NULL};
    char *sh_script[] = {"/bin/sh", "run.sh", NULL};
    char *env_python[] = {"env", "-i", "A=1", "python3", "x.py", NULL};
    char *timeout_python[] = {"timeout", "10s", "nice", "-n", "5", "python3", NULL};
    char *nice_git[] = {"nice", "-n", "5", "git", "status", NULL};
    assert_true(pf_launches_python("/bin/sh", sh_python, NULL));
    assert_true(pf_launches_python("/usr/bin/bash", bash_lc, NULL));
    assert_false(pf_launches_python("/bin/sh", sh_grep, NULL));
    assert_false(pf_launches_python("/bin/sh", sh_script, NULL));     /* no such file here */
    char dir[] = "/tmp/pf-child-env-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *sh_runs[] = {"sh", "-e", (char *)script(dir, "job.sh", "# python3 is started below\nA=1 nice python3 x.py\n"), NULL};
    assert_true(pf_launches_python("/bin/sh", sh_runs, NULL));
    char *sh_other[] = {"sh", (char *)script(dir, "other.sh", "echo python3\ngrep python3 f\n"), NULL};
    assert_false(pf_launches_python("/bin/sh", sh_other, NULL));
    /* the first 8 KiB are read; a command cut off at their end is not taken */
    char big[PF_SCRIPT_READ_BYTES + 64];
    memset(big, '#', sizeof big);
    memcpy(big + PF_SCRIPT_READ_BYTES - 7, "\npython3 x\n", 11);
    big[sizeof big - 1] = '\0';
    char *sh_cut[] = {"sh", (char *)script(dir, "cut.sh", big), NULL};
    assert_false(pf_launches_python("/bin/sh", sh_cut, NULL));
    big[PF_SCRIPT_READ_BYTES - 200] = '\n';
    memcpy(big + PF_SCRIPT_READ_BYTES - 199, "python3 y\n", 10);
    char *sh_in[] = {"sh", (char *)script(dir, "in.sh", big), NULL};
    assert_true(pf_launches_python("/bin/sh", sh_in, NULL));
    const char *names[] = {"job.sh", "other.sh", "cut.sh", "in.sh"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
    assert_true(pf_launches_python("/usr/bin/env", env_python, NULL));
    assert_true(pf_launches_python("/usr/bin/timeout", timeout_python, NULL));
    assert_false(pf_launches_python("/usr/bin/nice", nice_git, NULL));
    assert_false(pf_launches_python(NULL, sh_python, NULL));
}

static void test_command_runs_python(void **state)
{
    (void)state;
    alarm(10);      /* a parse that stops advancing would spin: fail then, not hang the suite */
    const char *yes[] = {"python3 x.py", "FOO=1 BAR=2 python3 x.py", "cd d && /usr/bin/python3 -m m",
                         "ls | xargs python3 f.py", "(python3 x)", "exec python3.11", "timeout 5s python -c 1",
                         "echo start; 'python3' run.py", "true\npython3 x"};
    const char *no[] = {"", "echo python", "grep -r python .", "ls -l", "git commit -m 'python3 x'",
                        "cat python3.txt", "./run_python_tests.sh", "(ls)", "(cd d; make) | tee log",
                        "echo \"deferring (trigger activated)\"", "f() { ls; }; f", "case $1 in a) ls ;; esac",
                        "x=$(uname)"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        if (!pf_command_runs_python(yes[i], NULL))
            fail_msg("not seen to run Python: %s", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        if (pf_command_runs_python(no[i], NULL))
            fail_msg("seen to run Python: %s", no[i]);
    alarm(0);
}

/* Every command line ends its parse: random text of the characters the parse treats apart (quotes,
 * separators, parentheses, variables, assignments), 200,000 lines, under an alarm. It runs in a vfork
 * child, whose parent waits for it: a parse that stood still hung the profiled program. */
static void test_command_parse_ends(void **state)
{
    (void)state;
    static const char alphabet[] = " \t\"';&|()`\n${}=/\\#python3-cx.";
    char *env[] = {"PYTHON=python3", "P=(", NULL};
    uint64_t x = 0x9E3779B97F4A7C15ull;
    char line[48];
    alarm(20);
    for (int i = 0; i < 200000; i++) {
        size_t n = (size_t)(i % (int)(sizeof line - 1));
        for (size_t k = 0; k < n; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            line[k] = alphabet[x % (sizeof alphabet - 1)];
        }
        line[n] = '\0';
        (void)pf_command_runs_python(line, i & 1 ? env : NULL);
    }
    alarm(0);
}

/* A program named by a variable: set earlier in the command line, else in the shell's environment. */
static void test_command_variables(void **state)
{
    (void)state;
    char *env[] = {"HOME=/root", "PYTHON=/usr/bin/python3.11", "EDITOR=vim", NULL};
    assert_true(pf_command_runs_python("\"$PYTHON\" job.py", env));
    assert_true(pf_command_runs_python("cd /srv && ${PYTHON} -m app", env));
    assert_true(pf_command_runs_python("PY=python3; nice \"$PY\" x.py", NULL));
    assert_true(pf_command_runs_python("PYTHON=vim\nPYTHON=/opt/bin/python3\n$PYTHON x", env));   /* the latest */
    assert_false(pf_command_runs_python("\"$PYTHON\" job.py", NULL));        /* not set anywhere */
    assert_false(pf_command_runs_python("$EDITOR notes.txt", env));
    assert_false(pf_command_runs_python("echo $PYTHON", env));                /* not in command position */
    assert_false(pf_command_runs_python("PYTHON=python3.12", env));         /* an assignment runs nothing */
    char *sh_var[] = {"/bin/sh", "-c", "\"$PYTHON\" -c 1", NULL};
    assert_true(pf_launches_python("/bin/sh", sh_var, env));
}

/* exec*p's PATH search, done the way glibc does it: the first executable entry, the caller's PATH. */
static void test_path_lookup(void **state)
{
    (void)state;
    char dir[] = "/tmp/pf-path-XXXXXX", buf[4096], path[600], *saved = getenv("PATH");
    assert_non_null(mkdtemp(dir));
    char tool[600], plain[600];     /* script() hands out one static buffer */
    snprintf(tool, sizeof tool, "%s", script(dir, "tool", "#!/usr/bin/env python3\n"));
    snprintf(plain, sizeof plain, "%s", script(dir, "plain", "data\n"));
    assert_int_equal(chmod(tool, 0755), 0);
    assert_int_equal(chmod(plain, 0644), 0);                          /* not executable: not a match */
    snprintf(path, sizeof path, "/nonexistent:%s:/usr/bin", dir);
    setenv("PATH", path, 1);
    assert_string_equal(pf_path_lookup("tool", buf, sizeof buf), tool);
    assert_string_equal(pf_path_lookup("plain", buf, sizeof buf), "plain");
    assert_string_equal(pf_path_lookup("no-such-tool", buf, sizeof buf), "no-such-tool");
    assert_string_equal(pf_path_lookup("./tool", buf, sizeof buf), "./tool");      /* a slash: as given */
    assert_int_equal(pf_program_is_python(pf_path_lookup("tool", buf, sizeof buf), NULL), 1);
    assert_int_equal(pf_program_is_python("tool", NULL), 0);            /* the bare name alone says nothing */
    if (saved)
        setenv("PATH", saved, 1);
    unlink(tool);
    unlink(plain);
    rmdir(dir);
}

static void test_command_line(void **state)
{
    (void)state;
    char buf[32];
    char *argv[] = {"/usr/bin/python3", "-c", "pass", NULL};
    assert_int_equal(pf_command_line(buf, sizeof buf, argv), strlen("python3 -c pass"));
    assert_string_equal(buf, "python3 -c pass");
    char *long_argv[] = {"python3", "worker.py", "--input", "/data/a-long-file-name.csv", NULL};
    size_t n = pf_command_line(buf, sizeof buf, long_argv);
    assert_int_equal(n, sizeof buf - 1);
    assert_string_equal(buf, "python3 worker.py --input /data");
    char *at_blank[] = {"python3", "0123456789012345678901", "x", NULL};   /* the cut falls on the blank */
    pf_command_line(buf, sizeof buf, at_blank);
    assert_string_equal(buf, "python3 0123456789012345678901");
    char *none[] = {NULL};
    assert_int_equal(pf_command_line(buf, sizeof buf, none), 0);
    assert_string_equal(buf, "");
    assert_int_equal(pf_command_line(buf, 0, argv), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preload_entry),
        cmocka_unit_test(test_env_profiles),
        cmocka_unit_test(test_program_is_python),
        cmocka_unit_test(test_launchers),
        cmocka_unit_test(test_command_runs_python),
        cmocka_unit_test(test_command_variables),
        cmocka_unit_test(test_command_parse_ends),
        cmocka_unit_test(test_path_lookup),
        cmocka_unit_test(test_command_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
