/* pf_pyruntime.c - where this CPython version keeps its "finalizing" word in _PyRuntime, for a load in
 * place of a call to _Py_IsFinalizing (pf_pyframes.h: finalizing_offset).
 *
 * A translation unit of its own: the runtime state's layout is in the internal headers, which need
 * Py_BUILD_CORE defined before Python.h, and that changes what Python.h declares for the frame reader's
 * code (3.12's headers then clash with a plain Python.h included first). Nothing here runs: two constants.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#if PY_MINOR_VERSION >= 9
#include <internal/pycore_runtime.h>
#define PF_FINALIZING_FIELD _finalizing      /* _Py_atomic_address (3.9-3.12), PyThreadState * (3.13) */
#else
#include <internal/pycore_pystate.h>
#define PF_FINALIZING_FIELD finalizing       /* PyThreadState * */
#endif

#include <stddef.h>
#include <stdint.h>

_Static_assert(sizeof(((_PyRuntimeState *)0)->PF_FINALIZING_FIELD) == sizeof(uintptr_t),
               "the finalizing word is read as one pointer-sized load");

__attribute__((visibility("hidden"))) const uint32_t pf_pyruntime_finalizing_offset =
    (uint32_t)offsetof(_PyRuntimeState, PF_FINALIZING_FIELD);
__attribute__((visibility("hidden"))) const uint32_t pf_pyruntime_size = (uint32_t)sizeof(_PyRuntimeState);
