/* pf_pyframes.h - the one door to CPython internals.
 *
 * The runtime (libpyflow.so, loaded by LD_PRELOAD into any process) must read the current Python stack from
 * inside malloc, without the GIL and without allocating. Struct layouts differ per CPython minor version, so
 * each supported version gets its own small shared object, pyframes/pf_pyframes_3XX.so, compiled against that
 * version's headers and loaded with dlopen once the runtime knows which interpreter it is in (Py_GetVersion).
 * Nothing else in pyflow includes a CPython header.
 *
 * Every function here is async-signal-safe in the sense the hooks need: no malloc, no locks, no Python API
 * call that may allocate or take the GIL.
 */
#ifndef PF_PYFRAMES_H
#define PF_PYFRAMES_H

#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

#define PF_PYFRAMES_ABI 8u
#define PF_PYFRAMES_ENTRY "pf_pyframes_get"  /* the one exported symbol of each per-version object */

typedef struct pf_pyframe {
    const void *code;        /* PyCodeObject*, valid while the frame runs */
    uint32_t lasti_bytes;    /* byte offset of the current instruction in co_code */
} pf_pyframe_t;

typedef struct pf_pycode_info {
    int32_t firstlineno;
    uint32_t linetable_format;   /* pf_linetable_format_t (core/pf_format.h) */
    const uint8_t *linetable;    /* points into the code object's bytes object; immutable */
    uint32_t linetable_len;
    uint32_t filename_len;       /* UTF-8 bytes written to the caller's buffer */
    uint32_t name_len;
    const void *identity[3];     /* fields that change when a code object's address is reused */
} pf_pycode_info_t;

/* capture_hinted's per-thread memory, kept by the caller (zeroed at first). */
typedef struct pf_pyframes_hint {
    const void *state;           /* the thread state the last capture found */
    unsigned long thread_ident;  /* this thread's pthread_self(), as CPython's thread states keep it (3.8-3.11
                                    check the GIL holder's against it); 0: not known yet */
} pf_pyframes_hint_t;

typedef struct pf_pyframes_api {
    uint32_t abi;                /* PF_PYFRAMES_ABI */
    uint32_t py_minor;           /* 8..13: the minor version this object was built for */

    /* Fills out[0..max) with the calling thread's Python frames, innermost first, skipping shims and
     * incomplete frames. Returns the number of frames (0: a thread state but no Python frame running),
     * -1 when the thread has no Python thread state (a native thread, or before init / after finalization).
     * Sets *truncated when the stack had more than max frames. */
    int (*capture)(pf_pyframe_t *out, int max, int *truncated);

    /* As capture, for signal handlers: the thread may be stopped at any instruction (half-way through
     * pushing a frame), so every pointer is read without faulting (process_vm_readv on pid, which must be
     * the calling process: the caller keeps it, as getpid() is a system call) and a walk that meets a bad
     * one stops there. Two system calls per frame. Returns -1 where no such read exists. */
    int (*capture_async)(long pid, pf_pyframe_t *out, int max, int *truncated);

    /* As capture, faster for a thread that calls it again and again: *hint (the caller's, one per thread,
     * zeroed at first) keeps the thread state found last time, taken again without asking the interpreter
     * when it is still this thread's current one. Its answers are capture's, except that with drop_files
     * (NULL: none) a frame whose code object's co_filename is drop_files[0] or drop_files[1] (two str
     * objects; NULL matches nothing) is left out unless it is the innermost or the outermost, and max and
     * *truncated count the frames kept. */
    int (*capture_hinted)(pf_pyframes_hint_t *hint, pf_pyframe_t *out, int max, int *truncated,
                          const void *const drop_files[2]);

    /* Describes a code object seen in a captured frame. filename and name are transcoded to UTF-8 into
     * the caller's buffers (truncated to their sizes). Returns 0, or -1 when code is not a code object. */
    int (*describe)(const void *code, pf_pycode_info_t *info, char *filename, size_t filename_size,
                    char *name, size_t name_size);

    /* Cheap identity check for a cached code pointer: fills identity[] exactly as describe() does.
     * Returns 0, or -1 when code is not a code object. */
    int (*identify)(const void *code, const void *identity[3]);

    /* 1 once interpreter finalization has begun, else 0. */
    int (*is_finalizing)(void);

    /* The same as a load: the byte offset of the runtime's finalizing word (pointer-sized, nonzero once
     * Py_FinalizeEx has begun) in _PyRuntime, and _PyRuntime's size, as this version's headers lay them out.
     * Where the running interpreter's _PyRuntime symbol has that size (its layout then is the headers'), the
     * runtime reads the word instead of calling is_finalizing (a call through the PLT and a pointer, twice
     * an allocation: 1.4% of an --exact recording of small objects), and hands it to use_finalizing_word so
     * that capture's own check reads it too. Until then, and where the sizes differ, the calls stay. */
    uint32_t finalizing_offset;
    uint32_t runtime_size;
    void (*use_finalizing_word)(const uintptr_t *word);

    /* Where identify() reads its three fields: byte offsets in a code object, for the recorder's check that
     * the code objects of a stack it has just seen again are still the ones it saw (pf_record.c), with a
     * load each instead of a call each. */
    uint32_t identity_offset[3];
} pf_pyframes_api_t;

typedef const pf_pyframes_api_t *(*pf_pyframes_entry_fn)(void);

/* The running interpreter's finalizing word, where its _PyRuntime symbol has the size py's headers give
 * it (a static interpreter, Debian's, exports the symbol as a shared libpython does); else NULL, and
 * is_finalizing stays. For the runtime's start-up and the reader's tests: dlsym and dladdr1 are no calls
 * for a hook. */
static inline const uintptr_t *pf_pyframes_finalizing_word(const pf_pyframes_api_t *py)
{
    void *runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!runtime || !py->runtime_size || !dladdr1(runtime, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
        sym->st_size != py->runtime_size || py->finalizing_offset + sizeof(uintptr_t) > py->runtime_size)
        return NULL;
    return (const uintptr_t *)(const void *)((const char *)runtime + py->finalizing_offset);
}

#endif /* PF_PYFRAMES_H */
