/* pf_pyframes.c - reads the calling thread's Python stack for one CPython minor version (3.9-3.13).
 *
 * Compiled once per version against that version's headers (internal ones included) into
 * pf_pyframes_3<minor>.so; the runtime dlopens the one matching the interpreter it finds itself in. This is
 * the only file in pyflow that knows CPython's structs. Everything here runs inside malloc hooks on any
 * thread, with or without the GIL: it never allocates, never locks, and only reads the calling thread's
 * own frames (which cannot change under it: the thread is here, not executing bytecode).
 *
 * The thread state comes from PyGILState_GetThisThreadState(), which returns this thread's state whether
 * or not it holds the GIL, and NULL before the runtime is set up, after finalization and on threads that
 * never ran Python (each version checks its key is initialized first).
 */
#include <Python.h>
#include <frameobject.h>

#if PY_MINOR_VERSION >= 13
#define Py_BUILD_CORE 1
#endif
#if PY_MINOR_VERSION >= 11
#include <internal/pycore_frame.h>
#endif

#include <string.h>

#include "pf_format.h"
#include "pf_pyframes.h"

#define PF_API __attribute__((visibility("default")))

/* ---- one function per version family: walk the frames ---- */

#if PY_MINOR_VERSION <= 10
static int capture_frames(PyThreadState *ts, pf_pyframe_t *out, int max, int *truncated)
{
    int n = 0;
    for (PyFrameObject *f = ts->frame; f; f = f->f_back) {
        if (n == max) {
            *truncated = 1;
            break;
        }
        int lasti = f->f_lasti < 0 ? 0 : f->f_lasti;
#if PY_MINOR_VERSION == 10
        lasti *= (int)sizeof(_Py_CODEUNIT);     /* 3.10 counts code units */
#endif
        out[n].code = f->f_code;
        out[n].lasti_bytes = (uint32_t)lasti;
        n++;
    }
    return n;
}
#elif PY_MINOR_VERSION <= 12
static int capture_frames(PyThreadState *ts, pf_pyframe_t *out, int max, int *truncated)
{
    int n = 0;
    if (!ts->cframe)
        return 0;
    for (_PyInterpreterFrame *f = ts->cframe->current_frame; f; f = f->previous) {
#if PY_MINOR_VERSION == 12
        if (f->owner == FRAME_OWNED_BY_CSTACK)   /* the shim pushed at each C->Python entry */
            continue;
#endif
        PyCodeObject *co = f->f_code;
        if (!co || _PyFrame_IsIncomplete(f))
            continue;
        if (n == max) {
            *truncated = 1;
            break;
        }
        ptrdiff_t units = f->prev_instr - _PyCode_CODE(co);
        out[n].code = co;
        out[n].lasti_bytes = (uint32_t)(units < 0 ? 0 : units * (ptrdiff_t)sizeof(_Py_CODEUNIT));
        n++;
    }
    return n;
}
#else /* 3.13 */
static int capture_frames(PyThreadState *ts, pf_pyframe_t *out, int max, int *truncated)
{
    int n = 0;
    for (_PyInterpreterFrame *f = ts->current_frame; f; f = f->previous) {
        if (f->owner == FRAME_OWNED_BY_CSTACK)
            continue;
        PyObject *ex = f->f_executable;
        if (!ex || Py_TYPE(ex) != &PyCode_Type)     /* None for shims; __init__ cleanup frames */
            continue;
        PyCodeObject *co = (PyCodeObject *)ex;
        if (f->owner != FRAME_OWNED_BY_GENERATOR && f->instr_ptr < _PyCode_CODE(co) + co->_co_firsttraceable)
            continue;   /* incomplete: still setting up */
        if (n == max) {
            *truncated = 1;
            break;
        }
        ptrdiff_t units = f->instr_ptr - _PyCode_CODE(co);
        out[n].code = co;
        out[n].lasti_bytes = (uint32_t)(units < 0 ? 0 : units * (ptrdiff_t)sizeof(_Py_CODEUNIT));
        n++;
    }
    return n;
}
#endif

static int capture(pf_pyframe_t *out, int max, int *truncated)
{
    *truncated = 0;
    PyThreadState *ts = PyGILState_GetThisThreadState();
    if (!ts)
        return -1;
    return capture_frames(ts, out, max, truncated);
}

/* ---- code objects ---- */

#if PY_MINOR_VERSION <= 9
#define PF_LINETABLE(co) ((co)->co_lnotab)
#define PF_LINETABLE_FORMAT PF_LT_LNOTAB
#elif PY_MINOR_VERSION == 10
#define PF_LINETABLE(co) ((co)->co_linetable)
#define PF_LINETABLE_FORMAT PF_LT_LINETABLE
#else
#define PF_LINETABLE(co) ((co)->co_linetable)
#define PF_LINETABLE_FORMAT PF_LT_LOCATIONS
#endif

static int is_code(const void *p)
{
    return p && Py_TYPE((PyObject *)p) == &PyCode_Type;
}

/* Transcodes a str object to UTF-8 into buf without allocating (reads its canonical representation).
 * Returns the bytes written; 0 for anything that is not a ready str. Cuts at a character boundary. */
static uint32_t str_to_utf8(PyObject *s, char *buf, size_t size)
{
    if (!s || !PyUnicode_Check(s) || size == 0)
        return 0;
#if PY_MINOR_VERSION <= 11
    if (!PyUnicode_IS_READY(s))
        return 0;
#endif
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_ssize_t len = PyUnicode_GET_LENGTH(s);
    size_t used = 0;
    for (Py_ssize_t i = 0; i < len; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        char enc[4];
        size_t n;
        if (c < 0x80) {
            enc[0] = (char)c;
            n = 1;
        } else if (c < 0x800) {
            enc[0] = (char)(0xC0 | (c >> 6));
            enc[1] = (char)(0x80 | (c & 0x3F));
            n = 2;
        } else if (c < 0x10000) {
            if (c >= 0xD800 && c <= 0xDFFF)
                c = 0xFFFD;     /* lone surrogate (surrogateescape'd file names): replacement char */
            enc[0] = (char)(0xE0 | (c >> 12));
            enc[1] = (char)(0x80 | ((c >> 6) & 0x3F));
            enc[2] = (char)(0x80 | (c & 0x3F));
            n = 3;
        } else {
            enc[0] = (char)(0xF0 | (c >> 18));
            enc[1] = (char)(0x80 | ((c >> 12) & 0x3F));
            enc[2] = (char)(0x80 | ((c >> 6) & 0x3F));
            enc[3] = (char)(0x80 | (c & 0x3F));
            n = 4;
        }
        if (used + n > size)
            break;
        memcpy(buf + used, enc, n);
        used += n;
    }
    return (uint32_t)used;
}

static int identify(const void *code, const void *identity[3])
{
    if (!is_code(code))
        return -1;
    const PyCodeObject *co = code;
    identity[0] = co->co_filename;
    identity[1] = co->co_name;
    identity[2] = PF_LINETABLE(co);
    return 0;
}

static int describe(const void *code, pf_pycode_info_t *info, char *filename, size_t filename_size, char *name,
                    size_t name_size)
{
    if (identify(code, info->identity) != 0)
        return -1;
    PyCodeObject *co = (PyCodeObject *)code;
    info->firstlineno = co->co_firstlineno;
    info->linetable_format = PF_LINETABLE_FORMAT;
    PyObject *lt = PF_LINETABLE(co);
    if (lt && PyBytes_Check(lt)) {
        info->linetable = (const uint8_t *)PyBytes_AS_STRING(lt);
        info->linetable_len = (uint32_t)PyBytes_GET_SIZE(lt);
    } else {
        info->linetable = NULL;
        info->linetable_len = 0;
    }
    info->filename_len = str_to_utf8(co->co_filename, filename, filename_size);
    info->name_len = str_to_utf8(co->co_name, name, name_size);
    return 0;
}

static int is_finalizing(void)
{
#if PY_MINOR_VERSION >= 13
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
}

static const pf_pyframes_api_t api = {
    .abi = PF_PYFRAMES_ABI,
    .py_minor = PY_MINOR_VERSION,
    .capture = capture,
    .describe = describe,
    .identify = identify,
    .is_finalizing = is_finalizing,
};

PF_API const pf_pyframes_api_t *pf_pyframes_get(void)
{
    return &api;
}
