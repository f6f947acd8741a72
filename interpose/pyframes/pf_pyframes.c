/* pf_pyframes.c - reads the calling thread's Python stack for one CPython minor version (3.8-3.13).
 *
 * Compiled once per version against that version's headers (internal ones included) into
 * pf_pyframes_3<minor>.so; the runtime dlopens the one matching the interpreter it finds itself in. This is
 * the only file in pyflow that knows CPython's structs; the version differences live in capture_frames()
 * (one body per version family) and the PF_LINETABLE macros. Everything here runs inside malloc hooks on
 * any thread, with or without the GIL, at any point of the process's life: it never allocates, never locks,
 * calls only CPython functions that read globals, and only walks the calling thread's own frames (which
 * cannot change under it: the thread is here, not executing bytecode).
 *
 * Where the thread state comes from, and why each moment of the process's life is safe (checked against
 * the disassembly of each version's PyGILState_GetThisThreadState and its pystate.c):
 *  - PyGILState_GetThisThreadState() returns this thread's state whether or not it holds the GIL.
 *    3.8-3.11 return NULL while _PyRuntime.gilstate.autoInterpreterState is NULL; 3.12/3.13 return NULL
 *    while the TSS key is not created. Both live in _PyRuntime's static (zero / _PyRuntimeState_INIT)
 *    data, so before Py_Initialize (our constructor runs before main) and after _PyGILState_Fini the
 *    answer is NULL without touching anything uninitialized. Native threads never had the key set: NULL.
 *  - A thread state is unbound from the key before it is freed (tstate_delete_common), so a thread that
 *    is exiting, or whose data-stack chunks are being unmapped, gets NULL, not a dangling pointer.
 *  - The exception is finalization: Py_FinalizeEx frees the states of daemon threads
 *    (_PyThreadState_DeleteExcept) while those threads, blocked in C with the GIL released, still have the
 *    key pointing at them. Once finalization has begun only the finalizing thread may run Python, and it
 *    is the one holding the GIL, so capture() then trusts a state only if it is also the GIL holder's
 *    (_PyThreadState_UncheckedGet: the GIL holder on 3.8-3.11, this thread's attached state on 3.12+);
 *    anyone else is reported as having no Python state. Cost: one load per capture (the runtime's
 *    finalizing word, pf_pyruntime.c, once the runtime has checked _PyRuntime's layout; a call until then).
 *  - _PyThreadState_UncheckedGet is NOT the main source: on 3.8-3.11 it is the GIL holder, i.e. another
 *    thread's state after Py_BEGIN_ALLOW_THREADS; on 3.12+ it is NULL once the GIL is released.
 *  - Frames on the chain are alive: the interpreter unlinks a frame (tstate->frame / current_frame moves
 *    to the caller) before clearing it, and a frame's code object is a strong reference.
 * Debian's /usr/bin/python3.11 (3.11.2) and pyenv's 3.11.7 ship byte-identical pycore_frame.h, code.h and
 * cpython/pystate.h, so one pf_pyframes_311.so serves both.
 */
#include <Python.h>
#include <frameobject.h>

#if PY_MINOR_VERSION >= 13
#define Py_BUILD_CORE 1     /* 3.13's internal headers refuse to compile without it */
#endif
#if PY_MINOR_VERSION >= 11
#include <internal/pycore_frame.h>
#endif

#include "pf_format.h"
#include "pf_pyframes.h"

#if PY_MAJOR_VERSION != 3 || PY_MINOR_VERSION < 8 || PY_MINOR_VERSION > 13
#error "pf_pyframes.c supports CPython 3.8 to 3.13"
#endif
#ifdef Py_GIL_DISABLED
#error "free-threaded builds (3.13t) have other layouts: a separate reader is needed"
#endif
_Static_assert(sizeof(_Py_CODEUNIT) == 2, "instruction offsets are reported in bytes, two per code unit");

#define PF_API __attribute__((visibility("default")))

/* A frame chain is never longer than the recursion limit allows, but skipped frames do not count towards
 * max: bound the walk so that a corrupted chain cannot keep a hook spinning. */
#define PF_MAX_STEPS(max) ((max) + 4096)

/* ---- reading fields: directly, or without faulting ----
 * The allocation hooks call capture() at a call boundary, where the thread's frame chain is consistent, and
 * read fields directly. A signal handler (watch/) stops the thread at any instruction, possibly half-way
 * through pushing a frame, so capture_async() reads every field with process_vm_readv on its own process:
 * a bad pointer then fails the read instead of faulting. It is a raw system call because this object may
 * import nothing from libc (see test_symbols). */
#if defined(__x86_64__)
static long raw_syscall6(long n, long a1, long a2, long a3, long a4, long a5, long a6)
{
    long ret;
    register long r10 __asm__("r10") = a4;
    register long r8 __asm__("r8") = a5;
    register long r9 __asm__("r9") = a6;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}

typedef struct pf_iov {
    void *base;
    size_t len;
} pf_iov_t;

/* Reads n (dst, src, size) triples in one system call: a frame's fields cost one call, not one each. pid is
 * the caller's (the runtime keeps it: getpid would be a second system call per read). */
static int safe_read_v(long pid, int n, void *const dst[], const void *const src[], const size_t size[])
{
    pf_iov_t local[4], remote[4];
    long total = 0;
    for (int i = 0; i < n; i++) {
        local[i].base = dst[i];
        remote[i].base = (void *)src[i];
        local[i].len = remote[i].len = size[i];
        total += (long)size[i];
    }
    return raw_syscall6(310 /* process_vm_readv */, pid, (long)local, n, (long)remote, n, 0) == total ? 0 : -1;
}

static int safe_read(long pid, void *dst, const void *src, size_t n)
{
    return safe_read_v(pid, 1, (void *const[]){dst}, (const void *const[]){src}, (const size_t[]){n});
}
#define PF_HAVE_SAFE_READ 1
#else
#define PF_HAVE_SAFE_READ 0
static int safe_read(long pid, void *dst, const void *src, size_t n) { return -1; }
static int safe_read_v(long pid, int n, void *const dst[], const void *const src[], const size_t size[]) { return -1; }
#endif

/* LOAD(var, lvalue): var = lvalue; evaluates to 0, or -1 when an async read failed. `async` is a
 * compile-time constant in each instantiation of capture_frames, so the direct path costs nothing extra;
 * `pid` (the process read from) is in scope there. */
#define LOAD(var, lvalue) (async ? safe_read(pid, &(var), &(lvalue), sizeof(var)) : ((var) = (lvalue), 0))
#define LOAD2(v1, l1, v2, l2)                                                                              \
    (async ? safe_read_v(pid, 2, (void *const[]){&(v1), &(v2)}, (const void *const[]){&(l1), &(l2)},           \
                         (const size_t[]){sizeof(v1), sizeof(v2)})                                        \
           : ((v1) = (l1), (v2) = (l2), 0))
#define LOAD3(v1, l1, v2, l2, v3, l3)                                                                      \
    (async ? safe_read_v(pid, 3, (void *const[]){&(v1), &(v2), &(v3)}, (const void *const[]){&(l1), &(l2), &(l3)}, \
                         (const size_t[]){sizeof(v1), sizeof(v2), sizeof(v3)})                            \
           : ((v1) = (l1), (v2) = (l2), (v3) = (l3), 0))
#define LOAD4(v1, l1, v2, l2, v3, l3, v4, l4)                                                              \
    (async ? safe_read_v(pid, 4, (void *const[]){&(v1), &(v2), &(v3), &(v4)},                                   \
                         (const void *const[]){&(l1), &(l2), &(l3), &(l4)},                               \
                         (const size_t[]){sizeof(v1), sizeof(v2), sizeof(v3), sizeof(v4)})                \
           : ((v1) = (l1), (v2) = (l2), (v3) = (l3), (v4) = (l4), 0))

/* ---- one function per version family: walk the frames ----
 * Each returns the number of frames written (0..max) and sets *truncated when frames remained; an async
 * walk that meets an unreadable pointer stops there and returns what it has. With drop (the
 * synchronous walks), frames whose code's co_filename is drop[0] or drop[1] (the import machinery's, as the
 * runtime found them: pf_pyframes_api_t) are left out between the innermost and the outermost frame. */

typedef struct pf_drop {
    int on;
    const void *file[2];
} pf_drop_t;

/* Puts a frame at out[n]; 1 when it is kept (the caller advances n), 0 when it is one of drop's files and
 * not the innermost. A frame left out stays at out[n] until the next one's: when it was the outermost, the
 * caller keeps it after all (walk_end). Folded into the walk, the test is one load and two compares on a
 * code object the walk has just read; as a pass over the captured frames after the walk it was a sixth of
 * what an --exact `import numpy` added (deep stacks, four frames in five the machinery's). The test has no
 * branch (which frames are the machinery's follows no pattern the predictor keeps across stacks); the
 * innermost frame skips it, and its load, by a branch (one-frame stacks are the commonest). */
static inline __attribute__((always_inline)) int put_frame(pf_pyframe_t *out, int n, PyCodeObject *co,
                                                           uint32_t lasti_bytes, const pf_drop_t drop)
{
    out[n].code = co;
    out[n].lasti_bytes = lasti_bytes;
    if (!drop.on || n == 0)
        return 1;
    const void *file = co->co_filename;
    return (file != drop.file[0]) & (file != drop.file[1]);
}

/* drop's files in registers for the walk (read through the pointer, they were loaded again for each frame:
 * the frames' stores might have changed them, as far as the compiler knew). */
static inline __attribute__((always_inline)) pf_drop_t drop_of(const void *const *files)
{
    return files ? (pf_drop_t){1, {files[0], files[1]}} : (pf_drop_t){0, {NULL, NULL}};
}

/* The count a walk returns: its kept frames, and the outermost when it was left out (still at out[n]). */
static inline __attribute__((always_inline)) int walk_end(int n, int kept_last)
{
    return n + !kept_last;
}

#if PY_MINOR_VERSION <= 10
/* 3.8-3.10: a linked list of PyFrameObject; one eval call per frame, no shims. f_lasti is -1 before the
 * first instruction, bytes on 3.8/3.9 and code units on 3.10. */
static inline __attribute__((always_inline)) int capture_frames(PyThreadState *ts, pf_pyframe_t *out, int max, int *truncated, const int async,
                                 const long pid, const void *const *drop_files)
{
    int n = 0, steps = 0, kept = 1;
    const pf_drop_t drop = drop_of(drop_files);
    PyFrameObject *f;
    if (LOAD(f, ts->frame))
        return 0;
    for (; f && steps < PF_MAX_STEPS(max); steps++) {
        PyCodeObject *co;
        int f_lasti;
        PyFrameObject *back;
        if (LOAD3(co, f->f_code, f_lasti, f->f_lasti, back, f->f_back))
            break;
        PyTypeObject *type = NULL;
        if (co && async && (LOAD(type, co->ob_base.ob_type) || type != &PyCode_Type))
            break;
        if (co) {
            if (n == max) {
                *truncated = 1;
                break;
            }
            int lasti = f_lasti < 0 ? 0 : f_lasti;
#if PY_MINOR_VERSION == 10
            lasti *= (int)sizeof(_Py_CODEUNIT);
#endif
            kept = put_frame(out, n, co, (uint32_t)lasti, drop);
            n += kept;
        }
        f = back;
    }
    return walk_end(n, kept);
}
#elif PY_MINOR_VERSION <= 12
/* 3.11/3.12: _PyInterpreterFrame records in the thread's data stack (or in generators), reached through
 * the current cframe. prev_instr is the instruction being executed (updated at each instruction start).
 * 3.12 pushes a C-stack-owned shim at each C->Python entry; both skip incomplete frames (still copying
 * arguments, before RESUME) as frame.f_back does (_PyFrame_IsIncomplete, spelled out on loaded fields). */
static inline __attribute__((always_inline)) int capture_frames(PyThreadState *ts, pf_pyframe_t *out, int max, int *truncated, const int async,
                                 const long pid, const void *const *drop_files)
{
    int n = 0, steps = 0, kept = 1;
    const pf_drop_t drop = drop_of(drop_files);
    _PyCFrame *cf;
    _PyInterpreterFrame *f;
    if (LOAD(cf, ts->cframe) || !cf || LOAD(f, cf->current_frame))
        return 0;
    for (; f && steps < PF_MAX_STEPS(max); steps++) {
        char owner;
        PyCodeObject *co;
        _Py_CODEUNIT *prev_instr;
        _PyInterpreterFrame *previous;
        if (LOAD4(owner, f->owner, co, f->f_code, prev_instr, f->prev_instr, previous, f->previous))
            break;
        f = previous;
#if PY_MINOR_VERSION == 12
        if (owner == FRAME_OWNED_BY_CSTACK)
            continue;
#endif
        if (!co)
            continue;
        PyTypeObject *type = &PyCode_Type;     /* trusted as is when read directly */
        int first_traceable;
        if ((async ? LOAD2(type, co->ob_base.ob_base.ob_type, first_traceable, co->_co_firsttraceable)
                   : LOAD(first_traceable, co->_co_firsttraceable)) ||
            type != &PyCode_Type)
            break;
        if (owner != FRAME_OWNED_BY_GENERATOR && prev_instr < _PyCode_CODE(co) + first_traceable)
            continue;
        if (n == max) {
            *truncated = 1;
            break;
        }
        ptrdiff_t units = prev_instr - _PyCode_CODE(co);
        kept = put_frame(out, n, co, (uint32_t)(units < 0 ? 0 : units * (ptrdiff_t)sizeof(_Py_CODEUNIT)), drop);
        n += kept;
    }
    return walk_end(n, kept);
}
#else /* 3.13 */
/* 3.13: tstate->current_frame; the executable is a code object or None (C-stack shims), instr_ptr is the
 * instruction being executed. The __init__ cleanup shim (_Py_InitCleanup) sits before its
 * _co_firsttraceable and is skipped as incomplete, like frame.f_back does. */
static inline __attribute__((always_inline)) int capture_frames(PyThreadState *ts, pf_pyframe_t *out, int max, int *truncated, const int async,
                                 const long pid, const void *const *drop_files)
{
    int n = 0, steps = 0, kept = 1;
    const pf_drop_t drop = drop_of(drop_files);
    _PyInterpreterFrame *f;
    if (LOAD(f, ts->current_frame))
        return 0;
    for (; f && steps < PF_MAX_STEPS(max); steps++) {
        char owner;
        PyObject *ex;
        _Py_CODEUNIT *instr_ptr;
        _PyInterpreterFrame *previous;
        if (LOAD4(owner, f->owner, ex, f->f_executable, instr_ptr, f->instr_ptr, previous, f->previous))
            break;
        f = previous;
        if (owner == FRAME_OWNED_BY_CSTACK || !ex)
            continue;
        PyCodeObject *co = (PyCodeObject *)ex;
        PyTypeObject *type;
        int first_traceable, got_both = 0;
        /* Async: the type and the first traceable instruction in one system call. A non-code executable
         * (None) is smaller than a code object and the read past it may fail: then the type alone. */
        if (async)
            got_both = LOAD2(type, ex->ob_type, first_traceable, co->_co_firsttraceable) == 0;
        if (!got_both && LOAD(type, ex->ob_type))
            break;
        if (type != &PyCode_Type)
            continue;
        if (!got_both && LOAD(first_traceable, co->_co_firsttraceable))
            break;
        if (owner != FRAME_OWNED_BY_GENERATOR && instr_ptr < _PyCode_CODE(co) + first_traceable)
            continue;
        if (n == max) {
            *truncated = 1;
            break;
        }
        ptrdiff_t units = instr_ptr - _PyCode_CODE(co);
        kept = put_frame(out, n, co, (uint32_t)(units < 0 ? 0 : units * (ptrdiff_t)sizeof(_Py_CODEUNIT)), drop);
        n += kept;
    }
    return walk_end(n, kept);
}
#endif

#if PY_MINOR_VERSION >= 13
#define PF_IS_FINALIZING_CALL() Py_IsFinalizing()
#define PF_GIL_HOLDER_STATE() PyThreadState_GetUnchecked()
#else
#define PF_IS_FINALIZING_CALL() _Py_IsFinalizing()
#define PF_GIL_HOLDER_STATE() _PyThreadState_UncheckedGet()
#endif

/* pf_pyruntime.c: where _PyRuntime keeps its finalizing word, as these headers lay it out. */
extern const uint32_t pf_pyruntime_finalizing_offset, pf_pyruntime_size;

/* The runtime's finalizing word, once the runtime has checked this interpreter's _PyRuntime has the
 * headers' layout (use_finalizing_word); until then the call. */
static const uintptr_t *finalizing_word;

static inline int finalizing_now(void)
{
    const uintptr_t *w = __atomic_load_n(&finalizing_word, __ATOMIC_RELAXED);
    return w ? __atomic_load_n(w, __ATOMIC_RELAXED) != 0 : PF_IS_FINALIZING_CALL() != 0;
}
#define PF_IS_FINALIZING() finalizing_now()

static void use_finalizing_word(const uintptr_t *word)
{
    __atomic_store_n(&finalizing_word, word, __ATOMIC_RELAXED);
}

/* The frames of ts, a state to be trusted, into out[0..max) (the arguments as capture's). */
static inline __attribute__((always_inline)) int frames_of(PyThreadState *ts, pf_pyframe_t *out, int max,
                                                           int *truncated, const int async, long pid,
                                                           const void *const *drop)
{
    int dummy;
    if (!truncated)
        truncated = &dummy;
    *truncated = 0;
    return capture_frames(ts, out, out && max > 0 ? max : 0, truncated, async, pid, drop);
}

/* ts's frames: the number, or -1 when ts is no (trustworthy) Python thread state of this thread's. */
static inline __attribute__((always_inline)) int capture_state(PyThreadState *ts, pf_pyframe_t *out, int max,
                                                               int *truncated, const int async, long pid,
                                                               const void *const *drop)
{
    if (truncated)
        *truncated = 0;
    if (!ts)
        return -1;
    /* During finalization the key of a daemon thread may point at a freed state (see the file comment). */
    if (PF_IS_FINALIZING() && ts != PF_GIL_HOLDER_STATE())
        return -1;
    return frames_of(ts, out, max, truncated, async, pid, drop);
}

/* Returns the number of frames, or -1 when this thread has no (trustworthy) Python thread state. */
static inline int capture_common(pf_pyframe_t *out, int max, int *truncated, const int async, long pid)
{
    return capture_state(PyGILState_GetThisThreadState(), out, max, truncated, async, pid, NULL);
}

static int capture(pf_pyframe_t *out, int max, int *truncated) { return capture_common(out, max, truncated, 0, 0); }

/* As capture, with the state capture found on this thread last time kept in hint->state (the caller's, per
 * thread; NULL at first). Where the interpreter's current state (PF_GIL_HOLDER_STATE: the GIL holder on
 * 3.8-3.11, this thread's attached state on 3.12+) is that state and was bound to this thread, it is the
 * one PyGILState_GetThisThreadState would return, and it passes the finalization check above (it is the
 * current state): its frames are read without that function's two calls into the thread-specific key (a
 * fifth of capture's instructions for a one-frame stack). The pointers are compared before anything is
 * read through them. On 3.8-3.11 the GIL holder may be another thread's state made at the address of one
 * this thread had and lost (PyGILState_Release): its thread id, PyThread_get_thread_ident() of the thread
 * it is bound to (unique among live threads), rules that out. That function is pthread_self() on POSIX;
 * the caller keeps this thread's in the hint, so the check is a compare instead of a call into the
 * interpreter's library for each capture (half a percent of an --exact recording). */
#if PY_MINOR_VERSION >= 12
#define PF_CURRENT_IS_MINE(ts, hint) 1    /* this thread's attached state: thread-local */
#else
#define PF_CURRENT_IS_MINE(ts, hint)                                                                       \
    ((ts)->thread_id == ((hint)->thread_ident ? (hint)->thread_ident : PyThread_get_thread_ident()))
#endif

static int capture_hinted(pf_pyframes_hint_t *hint, pf_pyframe_t *out, int max, int *truncated,
                          const void *const drop_files[2])
{
    PyThreadState *current = PF_GIL_HOLDER_STATE();
    if (__builtin_expect(current && current == hint->state, 1) && PF_CURRENT_IS_MINE(current, hint))
        return frames_of(current, out, max, truncated, 0, 0, drop_files);
    PyThreadState *ts = PyGILState_GetThisThreadState();
    hint->state = ts;
    return capture_state(ts, out, max, truncated, 0, 0, drop_files);
}

static int capture_async(long pid, pf_pyframe_t *out, int max, int *truncated)
{
    if (!PF_HAVE_SAFE_READ)
        return -1;
    return capture_common(out, max, truncated, 1, pid);
}

/* ---- code objects ---- */

#if PY_MINOR_VERSION <= 9
#define PF_LINETABLE_FIELD co_lnotab
#define PF_LINETABLE_FORMAT PF_LT_LNOTAB
#elif PY_MINOR_VERSION == 10
#define PF_LINETABLE_FIELD co_linetable
#define PF_LINETABLE_FORMAT PF_LT_LINETABLE
#else
#define PF_LINETABLE_FIELD co_linetable
#define PF_LINETABLE_FORMAT PF_LT_LOCATIONS
#endif
#define PF_LINETABLE(co) ((co)->PF_LINETABLE_FIELD)

/* A pointer compare, not PyCode_Check's subclass walk: code cannot be subclassed, and this reads one word
 * of a pointer the caller cached (which may since have been freed and reused for anything). */
static int is_code(const void *p)
{
    return p && Py_TYPE((PyObject *)p) == &PyCode_Type;
}

/* A byte copy that is not memcpy: the runtime interposes memcpy to watch copies, and this runs inside its
 * hooks (under its code-table lock). CMake builds this file with -fno-tree-loop-distribute-patterns so the
 * compiler does not turn the loop back into a memcpy call; tests check the object imports no memcpy. */
static void copy_bytes(char *dst, const void *src, size_t n)
{
    const char *s = src;
    for (size_t i = 0; i < n; i++)
        dst[i] = s[i];
}

/* Transcodes a str object to UTF-8 into buf without allocating, reading its canonical representation
 * (compact ASCII/latin-1/UCS-2/UCS-4, or the data pointer of a legacy string made ready). Lone surrogates
 * (surrogateescape'd file names) become U+FFFD so the output is always valid UTF-8. Cuts at a character
 * boundary when buf is full. Returns the bytes written; 0 for anything that is not a ready str. */
static uint32_t str_to_utf8(PyObject *s, char *buf, size_t size)
{
    if (!s || !buf || size == 0 || !PyUnicode_Check(s))
        return 0;
#if PY_MINOR_VERSION <= 11
    if (!PyUnicode_IS_READY(s))     /* legacy wstr-only string: reading it would need a conversion */
        return 0;
#endif
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_ssize_t len = PyUnicode_GET_LENGTH(s);
    if (!data)
        return 0;
    if (PyUnicode_IS_ASCII(s)) {
        size_t n = (size_t)len < size ? (size_t)len : size;
        copy_bytes(buf, data, n);
        return (uint32_t)n;
    }
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
                c = 0xFFFD;
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
        copy_bytes(buf + used, enc, n);
        used += n;
    }
    return (uint32_t)used;
}

/* The identity of a code object: its file name, name and line table objects. A code object freed and
 * another allocated at the same address almost always differs in at least one of them (same-named
 * functions in one file still have distinct line tables unless their bodies are identical, in which case
 * confusing them is harmless). Returns 0, or -1 when code is not a code object. */
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

/* Returns 0, or -1 when code is not a code object (info is then untouched apart from identity). */
static int describe(const void *code, pf_pycode_info_t *info, char *filename, size_t filename_size, char *name,
                    size_t name_size)
{
    if (!info || identify(code, info->identity) != 0)
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

/* Returns 1 once Py_FinalizeEx has marked the runtime finalizing, else 0 (also before initialization). */
static int is_finalizing(void)
{
    return PF_IS_FINALIZING() ? 1 : 0;
}

static pf_pyframes_api_t api = {   /* const but for the two fields pf_pyframes_get fills in */
    .abi = PF_PYFRAMES_ABI,
    .py_minor = PY_MINOR_VERSION,
    .capture = capture,
    .capture_async = capture_async,
    .capture_hinted = capture_hinted,
    .describe = describe,
    .identify = identify,
    .is_finalizing = is_finalizing,
    .use_finalizing_word = use_finalizing_word,
    /* identify()'s fields, in its order */
    .identity_offset = {offsetof(PyCodeObject, co_filename), offsetof(PyCodeObject, co_name),
                        offsetof(PyCodeObject, PF_LINETABLE_FIELD)},
};

/* The one exported symbol. Returns the API, or NULL when the running interpreter is not 3.<PY_MINOR_VERSION>
 * (Py_GetVersion only formats a static buffer; the runtime checks py_minor too, this is the last line of
 * defence against reading another version's structs). Parsed by hand: no libc call anywhere in here. */
PF_API const pf_pyframes_api_t *pf_pyframes_get(void)
{
    const char *v = Py_GetVersion();     /* "3.11.7 (main, ...)" */
    if (!v || v[0] != '3' || v[1] != '.')
        return NULL;
    int minor = 0, i = 2;
    while (v[i] >= '0' && v[i] <= '9' && minor < 1000)
        minor = minor * 10 + (v[i++] - '0');
    if (i <= 2 || minor != PY_MINOR_VERSION)
        return NULL;
    api.finalizing_offset = pf_pyruntime_finalizing_offset;     /* another unit's constants */
    api.runtime_size = pf_pyruntime_size;
    return &api;
}
