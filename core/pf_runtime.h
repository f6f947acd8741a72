/* pf_runtime.h - how the launcher talks to the runtime (libpyflow.so), and the runtime's file layout.
 *
 * The launcher (cli/) starts the program as `PYTHON args...` with libpyflow.so prepended to LD_PRELOAD and
 * the variables below set. The runtime's constructor reads them once. In a process that is not a supported
 * CPython (a pyenv shim, a shell, a program exec'd by the script) the runtime stays passive: every hook is a
 * pass-through and no file is written.
 *
 * Variables (all optional except PYFLOW_OUTPUT; absent PYFLOW_OUTPUT = passive):
 *   PYFLOW_OUTPUT        profile path for the launched process. The launcher creates it (empty) beforehand
 *                        so an unwritable path fails before the program runs. Any other profiled process
 *                        (fork child, subprocess, a second exec in the same pid) writes PYFLOW_OUTPUT.<pid>
 *                        (PYFLOW_OUTPUT.<pid>.<n> if that exists).
 *   PYFLOW_ROOT_PID      pid of the launched process; the process with this pid that first opens the profile
 *                        writes PYFLOW_OUTPUT itself and sets PF_HDR_ROOT.
 *   PYFLOW_SAMPLE_BYTES  mean Poisson sampling interval in bytes (default PF_DEFAULT_SAMPLE_BYTES).
 *   PYFLOW_OBJECT_BYTES  object threshold: allocations this large are recorded exactly
 *                        (default PF_DEFAULT_OBJECT_BYTES).
 *   PYFLOW_COPY_SAMPLE_BYTES  mean sampling interval over copied bytes (default: PYFLOW_SAMPLE_BYTES).
 *   PYFLOW_COPY_BYTES    copies this large are always recorded (default PF_DEFAULT_COPY_BYTES).
 *   PYFLOW_MAX_PROFILE_BYTES  the profile file's size cap (default and most: 4 GiB); sampling coarsens near
 *                        it (pf_writer.h) instead of records being lost.
 *   PYFLOW_EXACT=1       record every allocation (copies stay sampled: every memcpy would be too many).
 *   PYFLOW_NATIVE=1      capture native instruction pointers with each record (recorder/pf_unwinder.c).
 *   PYFLOW_NATIVE_WALK=libunwind  every native stack from libunwind's unw_backtrace, not the fast walk.
 *   PYFLOW_QUIET=1       the runtime prints nothing (tests of the launcher's own messages).
 *   PYFLOW_NO_WASTE=1    no untouched-page check or content fingerprint when a tracked object is freed.
 *
 * Per-version frame readers are found next to libpyflow.so: <dir of libpyflow.so>/pf_pyframes_3<minor>.so.
 */
#ifndef PF_RUNTIME_H
#define PF_RUNTIME_H

#define PF_RUNTIME_SONAME "libpyflow.so"
#define PF_DEFAULT_SAMPLE_BYTES (256u * 1024u)
#define PF_DEFAULT_OBJECT_BYTES (1024u * 1024u)
#define PF_DEFAULT_COPY_BYTES PF_DEFAULT_OBJECT_BYTES

#define PF_ENV_OUTPUT "PYFLOW_OUTPUT"
#define PF_ENV_ROOT_PID "PYFLOW_ROOT_PID"
#define PF_ENV_RUN_ID "PYFLOW_RUN_ID"          /* hex: the run every process's header names (run_id) */
/* The launcher's abstract AF_UNIX datagram socket, named from the run id: a profiled process other than the
 * one the launcher started sends its messages there ("PID UID COMM MESSAGE"), never to its own stderr,
 * which belongs to the program (and is often captured by it). Abstract names cross chroot and uid changes. */
#define PF_NOTES_NAME "pyflow-%016llx"
#define PF_NOTES_MAX 512                        /* bytes of one message */
#define PF_ENV_SAMPLE_BYTES "PYFLOW_SAMPLE_BYTES"
#define PF_ENV_OBJECT_BYTES "PYFLOW_OBJECT_BYTES"
#define PF_ENV_COPY_SAMPLE_BYTES "PYFLOW_COPY_SAMPLE_BYTES"
#define PF_ENV_COPY_BYTES "PYFLOW_COPY_BYTES"
#define PF_ENV_MAX_PROFILE_BYTES "PYFLOW_MAX_PROFILE_BYTES"
#define PF_ENV_EXACT "PYFLOW_EXACT"
#define PF_ENV_NATIVE "PYFLOW_NATIVE"
#define PF_ENV_NATIVE_WALK "PYFLOW_NATIVE_WALK"
#define PF_ENV_AGGREGATE "PYFLOW_AGGREGATE"   /* "1": per-site totals in snapshots (--aggregate) */
#define PF_ENV_AGGREGATE_MS "PYFLOW_AGGREGATE_MS" /* milliseconds between them (default 1000; measurements) */
#define PF_ENV_AGGREGATE_AFTER_MS "PYFLOW_AGGREGATE_AFTER_MS" /* full records for so long first */
#define PF_ENV_AGGREGATE_AFTER_BYTES "PYFLOW_AGGREGATE_AFTER_BYTES" /* ... or until the profile has so many bytes
                                                      (a plain run's default, docs/long-runs.md) */
#define PF_DEFAULT_AGGREGATE_AFTER_BYTES (192ull << 20)  /* a plain pyflow run's (cli/pf_launch.c) */
#define PF_ENV_QUIET "PYFLOW_QUIET"
#define PF_ENV_PACKED "PYFLOW_PACKED"              /* "0": one record per exact allocation and free, not packed
                                                      events (PF_REC_PACKED); for comparisons and tests */
#define PF_ENV_YOUNG_FREES "PYFLOW_YOUNG_FREES"    /* "0": a FREE event for every packed free, no life bytes
                                                      (core/pf_packed.h); for comparisons and tests */
#define PF_ENV_WHOLE_STACKS "PYFLOW_WHOLE_STACKS"  /* "1": every frame kept, the import machinery's and the native
                                                      ones past the native site (the report is the same;
                                                      for comparisons and tests) */
#define PF_ENV_OUTPUT_DIR "PYFLOW_OUTPUT_DIR"      /* without PYFLOW_OUTPUT: each process writes DIR/<host>.<pid>
                                                      (pyflow env; processes not started by pyflow run) */
#define PF_ENV_HOST "PYFLOW_HOST"                  /* the host name recorded and used in file names (unset:
                                                      gethostname); for tests that simulate several hosts */
#define PF_ENV_NO_WASTE "PYFLOW_NO_WASTE"          /* 1: no untouched pages or content fingerprints at free */
#define PF_ENV_VIA "PYFLOW_VIA"                    /* "<pid>:<pid>": set by a launcher (a shell) for what it runs */
#define PF_ENV_WATCH "PYFLOW_WATCH"                /* "stores", "loads", "copies", "all" or a comma list;
                                                      "auto": copies where debug registers fire, silently
                                                      nothing elsewhere (pyflow run's default); unset = off */
#define PF_ENV_WATCH_PERIOD "PYFLOW_WATCH_PERIOD"  /* sampling period in events (0/unset: ~250 a CPU-second) */
#define PF_ENV_WATCH_BUDGET "PYFLOW_WATCH_BUDGET"  /* emulated watchpoints: % of CPU time (unset: 10, 20 for loads) */
#define PF_ENV_WATCH_EVENT "PYFLOW_WATCH_EVENT"    /* libpfm4 event name (unset: cycles, else task-clock) */
#define PF_ENV_WATCH_SEED "PYFLOW_WATCH_SEED"      /* reservoir seed (unset: 1, reproducible) */
#define PF_ENV_WATCH_MECH "PYFLOW_WATCH_MECH"      /* where debug registers do not fire: "pages" (default:
                                                      page protections) or "steps" (single steps); "pages"
                                                      also where they fire, instead of them */

#endif /* PF_RUNTIME_H */
