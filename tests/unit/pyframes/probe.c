/* probe.c - test-only CPython extension (module pf_probe) that drives a pf_pyframes_3XX.so from Python.
 *
 * Built once per supported minor against that version's headers, linked against no libpython (like the
 * reader itself), so it also loads into Debian's static /usr/bin/python3.11. The test script compares what
 * the reader sees with sys._getframe(); everything the reader returns is turned into Python objects here,
 * under the GIL, after the capture (the capture itself runs exactly as a hook would: with or without the
 * GIL, on a Python or a native thread).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pf_pyframes.h"

#define PROBE_MAX_FRAMES 1024

static const pf_pyframes_api_t *api;

static PyObject *need_api(void)
{
    if (!api)
        PyErr_SetString(PyExc_RuntimeError, "pf_probe.load() first");
    return api ? Py_None : NULL;
}

static const uintptr_t *finalizing_word;

/* load(path, word=0) -> py_minor of the reader. Raises on dlopen failure or an entry returning NULL. With
 * word, the reader reads the interpreter's finalizing word from then on, as the runtime has it do
 * (pf_pyframes_finalizing_word); raises when this interpreter's _PyRuntime does not have the headers'
 * size. */
static PyObject *probe_load(PyObject *self, PyObject *args)
{
    const char *path;
    int word = 0;
    if (!PyArg_ParseTuple(args, "s|i", &path, &word))
        return NULL;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return PyErr_Format(PyExc_OSError, "dlopen: %s", dlerror());
    pf_pyframes_entry_fn entry = (pf_pyframes_entry_fn)dlsym(h, PF_PYFRAMES_ENTRY);
    if (!entry)
        return PyErr_Format(PyExc_OSError, "no %s in %s", PF_PYFRAMES_ENTRY, path);
    api = entry();
    if (!api)
        return PyErr_Format(PyExc_RuntimeError, "%s refused this interpreter", path);
    if (api->abi != PF_PYFRAMES_ABI)
        return PyErr_Format(PyExc_RuntimeError, "abi %u", api->abi);
    if (word) {
        if (!(finalizing_word = pf_pyframes_finalizing_word(api)))
            return PyErr_Format(PyExc_RuntimeError, "_PyRuntime is not %u bytes here", api->runtime_size);
        api->use_finalizing_word(finalizing_word);
    }
    return PyLong_FromUnsignedLong(api->py_minor);
}

/* One captured frame as (code, filename, name, firstlineno, lasti_bytes, lt_format, linetable, line). */
static PyObject *frame_tuple(const pf_pyframe_t *f)
{
    char fname[4096], name[1024];
    pf_pycode_info_t info;
    if (api->describe(f->code, &info, fname, sizeof fname, name, sizeof name) != 0)
        return PyErr_Format(PyExc_AssertionError, "describe refused a captured code object");
    PyCodeObject *co = (PyCodeObject *)f->code;
    int line = PyCode_Addr2Line(co, (int)f->lasti_bytes);
    return Py_BuildValue("(Os#s#iIIy#i)", (PyObject *)co, fname, (Py_ssize_t)info.filename_len, name,
                         (Py_ssize_t)info.name_len, info.firstlineno, f->lasti_bytes, info.linetable_format,
                         (const char *)info.linetable, (Py_ssize_t)info.linetable_len, line);
}

static PyObject *frames_list(const pf_pyframe_t *frames, int n, int truncated)
{
    PyObject *list = PyList_New(0);
    for (int i = 0; list && i < n; i++) {
        PyObject *t = frame_tuple(&frames[i]);
        if (!t || PyList_Append(list, t) != 0) {
            Py_XDECREF(t);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(t);
    }
    if (!list)
        return NULL;
    return Py_BuildValue("(Ni)", list, truncated);
}

/* capture(max=256, release_gil=False, sleep_ms=0) -> (frames, truncated), or None when capture returns -1.
 * With release_gil the capture runs after Py_BEGIN_ALLOW_THREADS and after sleeping sleep_ms, so that
 * another Python thread can take the GIL meanwhile (and become "the current thread state" on 3.9-3.11). */
static PyObject *probe_capture(PyObject *self, PyObject *args)
{
    int max = 256, release = 0, sleep_ms = 0;
    if (!need_api() || !PyArg_ParseTuple(args, "|ipi", &max, &release, &sleep_ms))
        return NULL;
    pf_pyframe_t frames[PROBE_MAX_FRAMES];     /* 16 KiB: per call, threads may capture at once */
    if (max < 0 || max > PROBE_MAX_FRAMES)
        max = PROBE_MAX_FRAMES;
    int truncated = 0, n;
    if (release) {
        Py_BEGIN_ALLOW_THREADS
        if (sleep_ms > 0)
            nanosleep(&(struct timespec){sleep_ms / 1000, (sleep_ms % 1000) * 1000000L}, NULL);
        n = api->capture(frames, max, &truncated);
        Py_END_ALLOW_THREADS
    } else {
        n = api->capture(frames, max, &truncated);
    }
    /* the hinted variant must give the same answer, on its first call on a thread and on later ones (the
     * hint kept from one probe call to the next of the thread, as the recorder keeps it) */
    static __thread pf_pyframes_hint_t hint;
    hint.thread_ident = (unsigned long)pthread_self();     /* as the recorder fills it */
    for (int k = 0; k < 2; k++) {
        pf_pyframe_t hinted[PROBE_MAX_FRAMES];
        int truncated_hinted = 0, n_hinted;
        if (release) {
            Py_BEGIN_ALLOW_THREADS
            n_hinted = api->capture_hinted(&hint, hinted, max, &truncated_hinted, NULL);
            Py_END_ALLOW_THREADS
        } else {
            n_hinted = api->capture_hinted(&hint, hinted, max, &truncated_hinted, NULL);
        }
        if (n_hinted != n || truncated_hinted != truncated)
            return PyErr_Format(PyExc_AssertionError, "capture_hinted (call %d) gave %d frames (truncated %d), "
                                "capture %d (%d)", k, n_hinted, truncated_hinted, n, truncated);
        for (int i = 0; i < n; i++)
            if (hinted[i].code != frames[i].code || hinted[i].lasti_bytes != frames[i].lasti_bytes)
                return PyErr_Format(PyExc_AssertionError, "capture_hinted differs from capture at frame %d", i);
    }
    /* the signal handlers' variant must see the same stack (read without faulting, field by field) */
    pf_pyframe_t again[PROBE_MAX_FRAMES];
    int truncated_again = 0;
    int n_again = api->capture_async((long)getpid(), again, max, &truncated_again);
    if (n_again != n || truncated_again != truncated)
        return PyErr_Format(PyExc_AssertionError, "capture_async gave %d frames (truncated %d), capture %d (%d)",
                            n_again, truncated_again, n, truncated);
    for (int i = 0; i < n; i++)
        if (again[i].code != frames[i].code || again[i].lasti_bytes != frames[i].lasti_bytes)
            return PyErr_Format(PyExc_AssertionError, "capture_async differs from capture at frame %d", i);
    if (n < 0)
        Py_RETURN_NONE;
    return frames_list(frames, n, truncated);
}

/* capture_dropping(file0, file1, max=256) -> (frames, truncated), or None: capture_hinted told to leave out
 * the frames whose code's co_filename is the object file0 or file1 (None: no object), as the recorder has
 * it leave out the import machinery's. */
static PyObject *probe_capture_dropping(PyObject *self, PyObject *args)
{
    PyObject *f0, *f1;
    int max = 256;
    if (!need_api() || !PyArg_ParseTuple(args, "OO|i", &f0, &f1, &max))
        return NULL;
    if (max < 0 || max > PROBE_MAX_FRAMES)
        max = PROBE_MAX_FRAMES;
    const void *drop[2] = {f0 == Py_None ? NULL : f0, f1 == Py_None ? NULL : f1};
    pf_pyframe_t frames[PROBE_MAX_FRAMES];
    pf_pyframes_hint_t hint = {NULL, (unsigned long)pthread_self()};
    int truncated = 0, n = 0;
    for (int k = 0; k < 2; k++)     /* the first call finds the state, the second takes the hint's */
        n = api->capture_hinted(&hint, frames, max, &truncated, drop);
    if (n < 0)
        Py_RETURN_NONE;
    return frames_list(frames, n, truncated);
}

/* describe(obj, fsize=4096, nsize=1024) -> (filename bytes, name bytes, firstlineno, format, linetable,
 * identity) or None when describe returns -1. Bytes, not str: the test checks they are valid UTF-8. */
static PyObject *probe_describe(PyObject *self, PyObject *args)
{
    PyObject *obj;
    Py_ssize_t fsize = 4096, nsize = 1024;
    if (!need_api() || !PyArg_ParseTuple(args, "O|nn", &obj, &fsize, &nsize))
        return NULL;
    char fname[4096], name[1024];
    if (fsize < 0 || fsize > (Py_ssize_t)sizeof fname || nsize < 0 || nsize > (Py_ssize_t)sizeof name)
        return PyErr_Format(PyExc_ValueError, "sizes");
    pf_pycode_info_t info;
    memset(&info, 0, sizeof info);
    if (api->describe(obj, &info, fname, (size_t)fsize, name, (size_t)nsize) != 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(y#y#iIy#(KKK))", fname, (Py_ssize_t)info.filename_len, name, (Py_ssize_t)info.name_len,
                         info.firstlineno, info.linetable_format, (const char *)info.linetable,
                         (Py_ssize_t)info.linetable_len, (unsigned long long)(uintptr_t)info.identity[0],
                         (unsigned long long)(uintptr_t)info.identity[1],
                         (unsigned long long)(uintptr_t)info.identity[2]);
}

/* identify(obj) -> identity tuple, or None when identify returns -1. */
static PyObject *probe_identify(PyObject *self, PyObject *args)
{
    PyObject *obj;
    if (!need_api() || !PyArg_ParseTuple(args, "O", &obj))
        return NULL;
    const void *id[3];
    if (api->identify(obj, id) != 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(KKK)", (unsigned long long)(uintptr_t)id[0], (unsigned long long)(uintptr_t)id[1],
                         (unsigned long long)(uintptr_t)id[2]);
}

static void *native_thread(void *arg)
{
    pf_pyframe_t frames[8];
    int truncated = 0;
    *(int *)arg = api->capture(frames, 8, &truncated);
    return NULL;
}

typedef struct {
    pf_pyframes_hint_t hint;
    int own_ident;      /* the hint holds this thread's pthread_self(), as the recorder's does */
    int rc;
} hinted_arg_t;

static void *native_thread_hinted(void *arg)
{
    hinted_arg_t *a = arg;
    pf_pyframe_t frames[8];
    int truncated = 0;
    if (a->own_ident)
        a->hint.thread_ident = (unsigned long)pthread_self();
    a->rc = api->capture_hinted(&a->hint, frames, 8, &truncated, NULL);
    return NULL;
}

/* native_thread_capture() -> what capture returns on a pthread that never ran Python (expected -1), and
 * capture_hinted there too: with no hint, and with a hint that is the state of the thread holding the GIL
 * (this one, waiting for it in pthread_join), as a hint is when the state its thread had was freed and
 * another thread's was made at its address (the reader must check whose it is, not walk this thread's
 * frames), with the thread's own ident in the hint and without. Returns the first answer that is not -1, or -1. */
static PyObject *probe_native_thread_capture(PyObject *self, PyObject *args)
{
    if (!need_api())
        return NULL;
    int rc = 12345;
    pthread_t th;
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = pthread_create(&th, NULL, native_thread, &rc);
    if (!err)
        pthread_join(th, NULL);
    Py_END_ALLOW_THREADS
    if (err)
        return PyErr_Format(PyExc_OSError, "pthread_create: %d", err);
    if (rc != -1)
        return PyLong_FromLong(rc);
    hinted_arg_t hinted[3] = {{{NULL, 0}, 0, 12345}, {{PyThreadState_Get(), 0}, 0, 12345},
                              {{PyThreadState_Get(), 0}, 1, 12345}};
    for (int k = 0; k < 3; k++) {
        if ((err = pthread_create(&th, NULL, native_thread_hinted, &hinted[k])) != 0)
            return PyErr_Format(PyExc_OSError, "pthread_create: %d", err);
        pthread_join(th, NULL);     /* the GIL held: this thread's state is the current one */
        if (hinted[k].rc != -1)
            return PyLong_FromLong(hinted[k].rc);
    }
    return PyLong_FromLong(-1);
}

static PyObject *probe_is_finalizing(PyObject *self, PyObject *args)
{
    if (!need_api())
        return NULL;
    return PyLong_FromLong(api->is_finalizing());
}

/* bench(iterations) -> (ns per capture call, frames per call); the caller arranges the stack depth. */
static PyObject *probe_bench(PyObject *self, PyObject *args)
{
    long iters;
    if (!need_api() || !PyArg_ParseTuple(args, "l", &iters))
        return NULL;
    pf_pyframe_t frames[128];
    int truncated = 0, n = 0;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < iters; i++) {
        n = api->capture(frames, 128, &truncated);
        __asm__ volatile("" : : "r"(frames) : "memory");    /* keep the loop */
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    return Py_BuildValue("(di)", iters > 0 ? ns / (double)iters : 0.0, n);
}

/* spin_nogil(): releases the GIL and calls capture in a loop until the process exits; meant for a daemon
 * thread that is still inside C while the main thread finalizes the interpreter. Never returns; exits the
 * process with status 4 if capture hands out frames once finalization has begun. */
static PyObject *probe_spin_nogil(PyObject *self, PyObject *args)
{
    if (!need_api())
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    pf_pyframe_t frames[64];
    int truncated;
    pf_pyframes_hint_t hint = {NULL, (unsigned long)pthread_self()};
    for (int k = 0;; k++) {
        int fin = api->is_finalizing();
        int n = k % 2 ? api->capture_hinted(&hint, frames, 64, &truncated, NULL) : api->capture(frames, 64, &truncated);
        if (fin && n >= 0) {    /* our state may be freed by now: the reader must not have trusted it */
            static const char msg[] = "pf-spin: daemon thread got frames during finalization\n";
            if (write(2, msg, sizeof msg - 1) < 0)
                _exit(5);
            _exit(4);
        }
        for (int i = 0; i < n; i++)     /* touch what a hook would touch next */
            if (api->identify(frames[i].code, (const void *[3]){0}) != 0)
                _exit(3);
    }
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* report(tag) -> None: writes "tag finalizing=F rc=N" to fd 2 with write(2), usable from __del__ methods
 * run during finalization when sys.stderr may be gone. */
static PyObject *probe_report(PyObject *self, PyObject *args)
{
    const char *tag;
    if (!need_api() || !PyArg_ParseTuple(args, "s", &tag))
        return NULL;
    pf_pyframe_t frames[64];
    int truncated;
    int rc = api->capture(frames, 64, &truncated);
    char line[256];
    int len = snprintf(line, sizeof line, "%s finalizing=%d rc=%d word=%d\n", tag, api->is_finalizing(), rc,
                       finalizing_word ? *finalizing_word != 0 : -1);
    if (write(2, line, (size_t)len) < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"load", probe_load, METH_VARARGS, NULL},
    {"capture", probe_capture, METH_VARARGS, NULL},
    {"capture_dropping", probe_capture_dropping, METH_VARARGS, NULL},
    {"describe", probe_describe, METH_VARARGS, NULL},
    {"identify", probe_identify, METH_VARARGS, NULL},
    {"native_thread_capture", probe_native_thread_capture, METH_NOARGS, NULL},
    {"is_finalizing", probe_is_finalizing, METH_NOARGS, NULL},
    {"bench", probe_bench, METH_VARARGS, NULL},
    {"spin_nogil", probe_spin_nogil, METH_NOARGS, NULL},
    {"report", probe_report, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "pf_probe", NULL, -1, methods};

PyMODINIT_FUNC PyInit_pf_probe(void)
{
    return PyModule_Create(&module);
}
