/* pf_format.h - the pyflow profile file, as written by the runtime and read by the reporter.
 *
 * A profile is one file per process. The runtime maps it MAP_SHARED and writes records straight into the
 * mapped pages, so everything written is in the page cache the moment it is stored: the profile survives
 * os._exit, an uncaught signal and SIGKILL without any flush. Each thread owns one chunk at a time and is the
 * only writer of it, so the hot path takes no lock; a record becomes visible when its 8-byte header is stored
 * (last, with release order). A reader therefore stops a chunk at the first zero header, and a process killed
 * in the middle of a record loses only that record. (A PF_REC_PACKED record grows an event at a time, its
 * header's length stored before each event and the event's tag byte last: core/pf_packed.h.)
 *
 * File layout
 *   OFFSET        SIZE              DESCRIPTION
 *   0             PF_HEADER_BYTES   pf_file_header_t, zero padded
 *   4096 + k*C    C = chunk_bytes   chunk k: pf_chunk_header_t, then records, then zeros
 *
 * Chunk layout
 *   OFFSET  SIZE  DESCRIPTION
 *   0       4     magic PF_CHUNK_MAGIC (0 = chunk never handed out: skip)
 *   4       4     writer: OS thread id (gettid), or 0 for the launcher's trailer chunk; a PF_REC_WRITER
 *                 record in the chunk names the writer of the records after it (a chunk left with room by an
 *                 exited thread is handed to the next new thread)
 *   8       8     reserved, zero
 *   16      ...   records, each starting on an 8-byte boundary
 *
 * Record layout
 *   OFFSET  SIZE  DESCRIPTION
 *   0       2     type (pf_rec_type_t); 0 = end of this chunk's records
 *   2       2     aux: type-specific small value
 *   4       4     bytes: total record size including this header, a multiple of 8, >= 8 (PF_REC_PACKED: its
 *                 valid bytes, any count >= 8; the next record starts at the 8-aligned end)
 *   8       ...   payload (the pf_rec_*_t structs below; variable parts follow the fixed part)
 *
 * Compatibility: readers reject another magic, a newer major version, or a header_bytes/chunk_bytes they
 * cannot walk, in plain words with the offset. Unknown record types are skipped by their length, so adding
 * a record type needs no version bump; changing a layout does.
 */
#ifndef PF_FORMAT_H
#define PF_FORMAT_H

#include <stdint.h>

#define PF_FILE_MAGIC "PYFLOWPF"          /* 8 bytes, no terminator stored */
#define PF_FORMAT_VERSION 7u         /* 7: young allocations in packed records (PF_PK_YOUNG, core/pf_packed.h),
                                        whose frees a life byte holds, which an older reader would take for
                                        corruption; 6: native stacks interned apart (PF_REC_NATIVE_STACK,
                                        PF_STACK_NATIVE_BY_ID), which an older reader would misread, and packed
                                        events (PF_REC_PACKED), whose length is not a multiple of 8, which an
                                        older reader would take for corruption; 5: short copy records
                                        (PF_REC_COPY_SHORT), which an older reader would
                                        skip (losing their copies); 4: short allocation records
                                        (PF_REC_ALLOC_SHORT), likewise; 3: chunks change writer (PF_REC_WRITER);
                                        2: interned stacks (PF_REC_STACK, PF_ALLOC_STACK_REF); 1 to 6 still read */
#define PF_HEADER_BYTES 4096u
#define PF_CHUNK_BYTES (64u * 1024u)
#define PF_CHUNK_MAGIC 0x4b434650u        /* "PFCK" little-endian */
#define PF_CHUNK_HEADER_BYTES 16u
#define PF_ARGV_BYTES 3072u
#define PF_MAX_PY_FRAMES 128u
#define PF_MAX_NATIVE_FRAMES 64u

/* Header flags. */
#define PF_HDR_EXACT 0x1u           /* every allocation recorded (--exact) */
#define PF_HDR_NATIVE 0x2u          /* native instruction pointers captured (--native) */
#define PF_HDR_ROOT 0x4u            /* the process the launcher started (not a fork or subprocess) */
#define PF_HDR_AGGREGATE 0x8u       /* --aggregate: per-site totals in PF_REC_AGG_SITES snapshots, not one
                                       ALLOC/FREE/COPY record each (those appear only for a stack the intern
                                       table could not take) */

typedef struct pf_file_header {
    char magic[8];                  /* PF_FILE_MAGIC */
    uint32_t version;               /* PF_FORMAT_VERSION */
    uint32_t header_bytes;          /* PF_HEADER_BYTES */
    uint32_t chunk_bytes;           /* PF_CHUNK_BYTES */
    uint32_t flags;                 /* PF_HDR_* */
    uint32_t pid;
    uint32_t ppid;
    uint64_t start_mono_ns;         /* CLOCK_MONOTONIC at start; record times are relative to it */
    uint64_t start_real_ns;         /* CLOCK_REALTIME at start */
    uint64_t mean_sample_bytes;     /* Poisson sampling mean interval, bytes */
    uint64_t object_threshold;      /* allocations of at least this many bytes are recorded exactly */
    uint32_t python_hex;            /* PY_VERSION_HEX of the interpreter, 0 if unknown */
    uint32_t argv_bytes;            /* bytes used in argv[] */
    char python_version[32];        /* "3.11.2", NUL terminated */
    char argv[PF_ARGV_BYTES];       /* the process's argv, NUL separated (from /proc/self/cmdline) */
    uint64_t records_dropped;       /* records the runtime could not write (size cap, full disk, too large),
                                       counted here live through a shared mapping of the header page: a
                                       full file has no room left for a record saying so. 0 in older files. */
    uint32_t via_pid;               /* started through programs pyflow does not profile (a shell, env, nice):
                                       the profiled process that started the first of them, else 0 (the
                                       parent is ppid). 0 in older files. */
    uint32_t via_child;             /* that first program's pid: what via_pid's SPAWN record names (or 0,
                                       a start whose pid was not known: system(3)) */
    uint64_t run_id;                /* the launcher's random id of the run, the same in every process's
                                       file: a PATH.<pid> beside PATH belongs to it only when they match
                                       (an earlier run's files are never merged). 0 in older files. */
} pf_file_header_t;

typedef struct pf_chunk_header {
    uint32_t magic;
    uint32_t tid;
    uint64_t reserved;
} pf_chunk_header_t;

typedef struct pf_rec_header {
    uint16_t type;
    uint16_t aux;
    uint32_t bytes;
} pf_rec_header_t;

typedef enum pf_rec_type {
    PF_REC_END = 0,
    PF_REC_ALLOC = 1,       /* a tracked allocation (sampled or >= threshold), with its stack */
    PF_REC_FREE = 2,        /* a tracked allocation was freed */
    PF_REC_CODE = 3,        /* a Python code object seen for the first time */
    PF_REC_MODULE = 4,      /* an executable mapping of a loaded object, for native symbolization */
    PF_REC_THREAD = 5,      /* a thread's first record: its name and whether it ever had a Python state */
    PF_REC_MARK = 6,        /* a point in time: interpreter finalization started, runtime stopped, ... */
    PF_REC_EXIT = 7,        /* written by the launcher after the process ended */
    PF_REC_COPY = 8,        /* a sampled or large copy (memcpy family, or a realloc that moved) */
    PF_REC_VERDICT = 9,     /* whether a recorded copy turned out redundant */
    PF_REC_ACCESS_PAIR = 10,/* watch/: a watched access and its repetition (redundant store or load) */
    PF_REC_WATCH_STATS = 11,/* watch/: running counts of samples, traps and verdicts, per thread */
    PF_REC_COPY_WRITE = 12, /* watch/: the first write that changed a watched word of a copy or its source */
    PF_REC_STACK = 13,      /* a call stack seen for the first time, given an id that ALLOC and COPY refer to */
    PF_REC_SPAWN = 14,      /* a thread or process was started: when, which, and the starting thread's stack */
    PF_REC_WRITER = 15,     /* the records after it in this chunk are another thread's (pf_rec_writer_t) */
    PF_REC_ARGV = 16,       /* the launched process's whole argv (aux: how many), each NUL terminated, written by
                               the launcher in its trailer chunk: the header keeps only those that fit
                               PF_ARGV_BYTES; one past the chunk's room is cut */
    PF_REC_CONTENT = 17,    /* what a tracked object held as it was freed (or at exit): untouched pages, a
                               fingerprint of its contents (pf_rec_content_t) */
    /* --aggregate (pf_rec_agg_*_t below) */
    PF_REC_AGG_SITES = 18,  /* a snapshot: the running totals of the sites that changed since the last one */
    PF_REC_AGG_PEAK = 19,   /* the live bytes of each site at the process's peak, where they changed */
    PF_REC_NOTE = 20,       /* a message the launcher received from a child process (why it was not profiled,
                               a full disk), NUL terminated, written in the trailer chunk after ARGV */
    PF_REC_ALLOC_SHORT = 21,/* an ALLOC recorded exactly with an interned stack, in 32 bytes, not 56
                               (pf_rec_alloc_short_t) */
    PF_REC_AGG_FLOWS = 22,  /* --aggregate, with a snapshot: the running totals of the copy flows (copy stack,
                               source site, destination site, kind) that changed, with their verdicts */
    PF_REC_COPY_SHORT = 23, /* a COPY recorded exactly with an interned stack that no verdict will name, in 40
                               bytes, not 72 (pf_rec_copy_short_t) */
    PF_REC_NATIVE_STACK = 24,   /* --native: a native stack (IPs) seen for the first time, given an id that
                                   STACK records with PF_STACK_NATIVE_BY_ID refer to (pf_rec_native_stack_t) */
    PF_REC_PACKED = 25,     /* many ALLOC_SHORT and FREE events of one thread, each delta-encoded against the one
                               before it, 5 to 12 bytes each (core/pf_packed.h); header bytes = valid length */
    PF_REC_RUNNING = 26,    /* written by the launcher in its trailer, after it waited for the program's Python
                               children that outlived it: the pids of those still running then (aux: how many;
                               payload: uint32 each). Every other child had ended. Readers that do not know it
                               skip it: no version change */
    PF_REC_TYPE_MAX
} pf_rec_type_t;

/* Allocation domains. python_bytes = PYRAW+PYMEM+PYOBJ, native_bytes = MALLOC+MMAP, gpu_bytes = GPU. */
typedef enum pf_domain {
    PF_DOMAIN_PYRAW = 0,
    PF_DOMAIN_PYMEM = 1,
    PF_DOMAIN_PYOBJ = 2,
    PF_DOMAIN_MALLOC = 3,
    PF_DOMAIN_MMAP = 4,
    PF_DOMAIN_GPU = 5,
    PF_DOMAIN_COUNT
} pf_domain_t;

static inline int pf_domain_is_python(unsigned d) { return d <= PF_DOMAIN_PYOBJ; }
static inline int pf_domain_is_native(unsigned d) { return d == PF_DOMAIN_MALLOC || d == PF_DOMAIN_MMAP; }

/* What Python object a tracked block is, as the runtime saw it at a moment its memory was the program's
 * for certain (the free or realloc of the block, a copy into or out of it): the object itself, by its
 * type word (str, bytes, bytearray, int, float after the reference count; list, dict, tuple, set after
 * the garbage collector's 16-byte header as well), or the storage of one: a dict's keys table (its header
 * and the allocation's size agree, field by field, with CPython's layout of the version), a list's item
 * array (a PyMem block whose first two words point at objects whose type is a type; read with
 * process_vm_readv, so a block that is no list cannot fault). Carried by FREE (aux) and COPY (end_types). */
typedef enum pf_obj_kind {
    PF_OBJ_UNKNOWN = 0,     /* none of these, or not looked at (native memory, an older runtime) */
    PF_OBJ_STR = 1,
    PF_OBJ_BYTES = 2,
    PF_OBJ_BYTEARRAY = 3,
    PF_OBJ_LIST = 4,        /* a list object or its item array */
    PF_OBJ_DICT = 5,        /* a dict object or its keys table */
    PF_OBJ_TUPLE = 6,
    PF_OBJ_SET = 7,         /* set or frozenset object */
    PF_OBJ_INT = 8,
    PF_OBJ_FLOAT = 9,
    PF_OBJ_KINDS
} pf_obj_kind_t;

/* ALLOC flags (pf_rec_alloc_t.flags). */
#define PF_ALLOC_SAMPLED 0x1u   /* chosen by the byte sampler: est_bytes = size / P(sampled) */
#define PF_ALLOC_EXACT 0x2u     /* at/above the object threshold or --exact: est_bytes = size */
#define PF_ALLOC_NO_PYSTATE 0x4u/* the thread had no Python thread state: a native thread */
#define PF_ALLOC_TRUNCATED 0x8u /* the Python stack was deeper than recorded (outermost frames dropped) */
#define PF_ALLOC_STACK_REF 0x10u/* n_py = n_native = 0 and a pf_rec_stack_ref_t follows the fixed part: the
                                   stack is the PF_REC_STACK record with that id (ALLOC and COPY only) */

/* One Python frame of a stack, innermost first. */
typedef struct pf_rec_pyframe {
    uint32_t code_id;       /* id from a PF_REC_CODE record of the same file */
    uint32_t lasti_bytes;   /* byte offset of the current instruction in co_code */
} pf_rec_pyframe_t;

/* PF_REC_ALLOC payload; then n_py pf_rec_pyframe_t, then n_native uint64_t instruction pointers
 * (innermost first), then zero padding to 8 bytes; or, with PF_ALLOC_STACK_REF, a pf_rec_stack_ref_t. */
typedef struct pf_rec_alloc {
    uint64_t t_ns;          /* since header.start_mono_ns */
    uint64_t addr;
    uint64_t size;          /* requested bytes */
    uint64_t est_bytes;     /* unbiased estimate of the bytes this record stands for */
    uint8_t domain;         /* pf_domain_t */
    uint8_t flags;          /* PF_ALLOC_* */
    uint16_t n_py;
    uint16_t n_native;
    uint16_t reserved;
} pf_rec_alloc_t;

/* PF_REC_ALLOC_SHORT payload: the ALLOC an --exact run writes for nearly every allocation, where
 * est_bytes = size (flags & PF_ALLOC_EXACT), the size fits 32 bits and the stack is interned (flags &
 * PF_ALLOC_STACK_REF): 32 bytes with its header, against 56 for the same facts in a pf_rec_alloc_t. At a
 * gigabyte of records a second, the bytes are the cost: each page of the profile is a page the kernel
 * allocates, zeroes, maps and writes back. aux = domain | flags << 8. Readers treat it as the ALLOC that
 * pf_alloc_short_expand() gives. */
typedef struct pf_rec_alloc_short {
    uint64_t t_ns;
    uint64_t addr;          /* at the offset of pf_rec_alloc_t's and pf_rec_free_t's */
    uint32_t size;
    uint32_t stack_id;
} pf_rec_alloc_short_t;

#define PF_ALLOC_SHORT_AUX(domain, flags) ((uint16_t)((domain) | (uint32_t)(flags) << 8))

/* Interned stacks. Most recorded allocations and copies repeat a stack seen before (a loop allocating on one
 * line), and a stack (8 bytes a Python frame, 8 a native IP) is most of their record: 100 to 500 bytes in
 * real programs. So a stack gets an id the first time it is recorded, in a PF_REC_STACK record written
 * before the first record that refers to it (in the same thread's chunks; ids are unique in the file), and
 * later records carry the id instead. Readers resolve ids after reading the whole file: a reference may sit
 * in another thread's chunk, earlier in the file than the definition.
 *
 * PF_REC_STACK payload; then n_py pf_rec_pyframe_t and n_native uint64_t, as an ALLOC's inline stack; or,
 * with aux & PF_STACK_NATIVE_BY_ID, n_py pf_rec_pyframe_t and one pf_rec_native_ref_t naming the
 * PF_REC_NATIVE_STACK that holds its n_native IPs.
 *
 * Native stacks apart: under --native, stacks differ far more often by their Python frames than by their
 * native ones (importing numpy made 95,792 stacks with 33,756 native parts, up to 64 IPs each), so the
 * native part is interned on its own and a STACK names it by id. Same rules as stack ids: a NATIVE_STACK is
 * written before the first STACK naming it, in the same thread's chunks; readers resolve after the walk. */
typedef struct pf_rec_stack {
    uint32_t stack_id;      /* >= 1 */
    uint16_t n_py;
    uint16_t n_native;      /* its IPs, inline or in the NATIVE_STACK it names */
} pf_rec_stack_t;

#define PF_STACK_NATIVE_BY_ID 0x1u  /* STACK aux: the native IPs are in a NATIVE_STACK (pf_rec_native_ref_t) */

typedef struct pf_rec_native_ref {
    uint32_t native_id;     /* >= 1 */
    uint32_t reserved;
} pf_rec_native_ref_t;

/* PF_REC_NATIVE_STACK payload; then n_native uint64_t IPs, innermost first (as a stack's inline IPs). */
typedef struct pf_rec_native_stack {
    uint32_t native_id;     /* >= 1; ids of their own, not stack ids */
    uint16_t n_native;      /* >= 1 */
    uint16_t reserved;
} pf_rec_native_stack_t;

/* What follows an ALLOC's or COPY's fixed part when flags & PF_ALLOC_STACK_REF. */
typedef struct pf_rec_stack_ref {
    uint32_t stack_id;
    uint32_t reserved;
} pf_rec_stack_ref_t;

/* PF_REC_FREE payload. aux = PF_FREE_AUX(domain of the free call, pf_obj_kind_t of the object): the kind is
 * 0 in files of runtimes before it, and readers that predate it ignore aux. */
#define PF_FREE_AUX(domain, kind) ((uint16_t)((domain) | (uint32_t)(kind) << 8))
#define PF_FREE_DOMAIN(aux) ((aux) & 0x7u)
#define PF_FREE_BY_REALLOC 0x80u    /* aux: the old block of a realloc, whose contents live on in the block it
                                       returned (the next ALLOC at the same address, or the COPY of kind
                                       PF_COPY_REALLOC from it); 0 in files of runtimes before it */
#define PF_FREE_KIND(aux) ((pf_obj_kind_t)((aux) >> 8 & 0xffu))
typedef struct pf_rec_free {
    uint64_t t_ns;
    uint64_t addr;
} pf_rec_free_t;

/* Line-table encodings carried by PF_REC_CODE (aux). */
typedef enum pf_linetable_format {
    PF_LT_LNOTAB = 1,       /* 3.9: co_lnotab, byte offsets */
    PF_LT_LINETABLE = 2,    /* 3.10: co_linetable (PEP 626), byte offsets */
    PF_LT_LOCATIONS = 3     /* 3.11+: co_linetable location table (PEP 657), code units */
} pf_linetable_format_t;

/* PF_REC_CODE payload; then filename, name, linetable bytes back to back (no terminators), then padding.
 * aux = pf_linetable_format_t. Strings are UTF-8. */
typedef struct pf_rec_code {
    uint32_t code_id;
    int32_t firstlineno;
    uint32_t filename_len;
    uint32_t name_len;
    uint32_t linetable_len;
    uint32_t reserved;
} pf_rec_code_t;

/* PF_REC_MODULE payload; then the path (path_len bytes), padding. One record per executable PT_LOAD. */
typedef struct pf_rec_module {
    uint64_t start;         /* runtime address of the segment */
    uint64_t end;
    uint64_t load_bias;     /* runtime address = file vaddr + load_bias */
    uint32_t path_len;
    uint32_t reserved;
} pf_rec_module_t;

/* PF_REC_THREAD payload; with aux & PF_THREAD_HANDLE a uint64_t follows (the thread's pthread_t, which a
 * PF_REC_SPAWN of kind PF_SPAWN_THREAD names); then the name (name_len bytes), padding. */
typedef struct pf_rec_thread {
    uint64_t t_ns;
    uint32_t tid;
    uint32_t name_len;
} pf_rec_thread_t;

#define PF_THREAD_HANDLE 0x1u

/* PF_REC_WRITER payload. A thread that exits with room left in its chunk gives the chunk to the next thread
 * that starts recording, which writes this record first: without it every short-lived thread would leave a
 * 64 KiB chunk holding a few hundred bytes (3000 short threads: a 197 MB profile for 0.3 MB of records). */
typedef struct pf_rec_writer {
    uint32_t tid;           /* the new writer (gettid) */
    uint32_t reserved;
} pf_rec_writer_t;

/* Who started a thread or a process. Memory a thread or process allocates with no line of the user's on
 * its stack (a pool's worker running library code, a spawned interpreter's start-up) is charged by the
 * reporter to the user's line that started it, following starts back through threads and processes.
 * Written by the starting thread (or, for a vfork child about to exec, by that child on its parent's
 * behalf, into the parent's file), with a time taken *before* the start, so it precedes every record of
 * what it started.
 *
 * PF_REC_SPAWN payload; aux = pf_spawn_kind_t; then the stack (Python frames only, inline or a reference,
 * as for ALLOC). */
typedef enum pf_spawn_kind {
    PF_SPAWN_THREAD = 1,    /* child = the new thread's pthread_t (its THREAD record's handle) */
    PF_SPAWN_PROCESS = 2    /* child = the new process's pid (its file's header pid or via_child), or 0:
                               system(3), which starts its shell where no hook sees the pid */
} pf_spawn_kind_t;

typedef struct pf_rec_spawn {
    uint64_t t_ns;
    uint64_t child;
    uint32_t tid;           /* the starting thread (a vfork child writes its parent thread's) */
    uint16_t n_py;
    uint16_t n_native;
    uint8_t flags;          /* PF_ALLOC_NO_PYSTATE / _TRUNCATED / _STACK_REF */
    uint8_t child_flags;    /* PF_SPAWN_UNPROFILED */
    uint16_t command_len;   /* bytes of command line after the stack (unprofiled children only) */
    uint8_t reserved[4];
} pf_rec_spawn_t;

/* The process runs Python but not profiled: its environment lacks pyflow's LD_PRELOAD entry or
 * PYFLOW_OUTPUT (subprocess's env=, os.execve). Written by the starter (vfork child, posix_spawn), or by a
 * process about to exec itself into such a program (then child is its own pid). The command line follows
 * the stack (command_len bytes, no NUL). Such a start begins no profile: the reporter lists it apart. */
#define PF_SPAWN_UNPROFILED 0x1u
#define PF_SPAWN_MAX_COMMAND 200u

typedef enum pf_mark_kind {
    PF_MARK_FINALIZING = 1, /* interpreter shutdown began: frees after this do not cancel (live-at-exit) */
    PF_MARK_DROPPED = 2,    /* value = records dropped (file full or unwritable) */
    PF_MARK_NOTE = 3,       /* value = 0; a text note follows in the payload tail (note_len bytes) */
    PF_MARK_SAMPLING = 4,   /* value = factor: from here, the sampling means are factor x the header's (the
                               profile neared its size cap); the object threshold is at least the new mean */
    PF_MARK_LABEL = 5,      /* value = 0; the program's own label follows as the note (pyflow_mark(): the
                               pytest plugin's "test-start NODEID" / "test-end NODEID") */
    PF_MARK_PROCESS_LABEL = 6, /* value = 0; note "key=value": what a distributed engine calls this process
                               (host=, rank=, local_rank=, world_size=, worker=, ...; recorder/pf_labels.c).
                               Readers that do not know it skip it: no version change */
    PF_MARK_EXIT = 7,       /* value = status: the process called _exit/_Exit (os._exit, a fork child of
                               multiprocessing) and so skipped the interpreter's shutdown. A process with
                               neither this nor PF_MARK_FINALIZING was killed or crashed */
    PF_MARK_EXEC = 8        /* value = 0; note = the command line it is about to exec (cut at
                               PF_SPAWN_MAX_COMMAND bytes). Its image ends there unless records come after
                               it (the exec failed: os.execvp tries one PATH entry after another). Readers
                               that do not know it skip it: no version change */
} pf_mark_kind_t;

/* What a tracked object held when it was freed, written just before its FREE (same thread), or at exit for
 * an object still live then (PF_CONTENT_AT_EXIT). Objects with neither a whole page nor hashable contents
 * get none. aux = log2 of the page size the page counts are in.
 *  - checked_pages: the whole pages inside the object, asked of mincore(); untouched_pages: those of them
 *    never resident, so never written or read (a fresh mapping's page is resident once touched).
 *  - fingerprint: a 64-bit hash of the contents (the first PF_CONTENT_FULL_BYTES in full, then a stride of
 *    words to the end, and the size), when flags & PF_CONTENT_HASHED. The reporter compares the
 *    fingerprints of objects allocated on the same call path with the same size: a match is a value the
 *    line computed again (recomputed values). Not hashed: an object with untouched pages, all-zero
 *    contents (PF_CONTENT_ZERO), contents that look like pointers (PF_CONTENT_POINTERS: a list's item
 *    array, a struct), Python objects other than str and bytes, GPU memory. */
#define PF_CONTENT_HASHED 0x1u
#define PF_CONTENT_ZERO 0x2u
#define PF_CONTENT_POINTERS 0x4u
#define PF_CONTENT_AT_EXIT 0x8u
#define PF_CONTENT_FULL_BYTES (16u * 1024u)
#define PF_CONTENT_STRIDE_WORDS 1024u
typedef struct pf_rec_content {
    uint64_t t_ns;
    uint64_t addr;          /* the object's address, as in its ALLOC */
    uint64_t fingerprint;
    uint32_t checked_pages;
    uint32_t untouched_pages;
    uint32_t flags;         /* PF_CONTENT_* */
    uint32_t reserved;
} pf_rec_content_t;

/* PF_REC_MARK payload. aux = pf_mark_kind_t; then note text for PF_MARK_NOTE. */
typedef struct pf_rec_mark {
    uint64_t t_ns;
    uint64_t value;
    uint32_t note_len;
    uint32_t reserved;
} pf_rec_mark_t;

/* PF_REC_EXIT payload (launcher). */
#define PF_EXIT_SIGNALED 0x1u
typedef struct pf_rec_exit {
    uint64_t elapsed_ns;    /* wall time from launch to exit as the launcher saw it */
    int32_t code;           /* exit code, or the signal number when PF_EXIT_SIGNALED */
    uint32_t flags;
} pf_rec_exit_t;

/* Copy kinds (PF_REC_COPY aux). */
typedef enum pf_copy_kind {
    PF_COPY_MEMCPY = 1,     /* memcpy, mempcpy, __memcpy_chk */
    PF_COPY_MEMMOVE = 2,    /* memmove, __memmove_chk */
    PF_COPY_REALLOC = 3,    /* a realloc that moved the block: src = old block, dst = new block */
    PF_COPY_H2D = 4,        /* cudaMemcpy* / cuMemcpy* host to device */
    PF_COPY_D2H = 5,        /* device to host */
    PF_COPY_D2D = 6,        /* device to device */
    PF_COPY_H2H = 7         /* a CUDA copy call between two host buffers */
} pf_copy_kind_t;

/* PF_REC_COPY payload; then n_py pf_rec_pyframe_t and n_native uint64_t, or a stack reference, as for ALLOC. The reporter maps
 * src and dst to the tracked objects live at t_ns that contain them (or to "untracked"). */
typedef struct pf_rec_copy {
    uint64_t t_ns;
    uint64_t copy_id;       /* unique in the file; referenced by PF_REC_VERDICT */
    uint64_t dst;
    uint64_t src;
    uint64_t bytes;
    uint64_t est_bytes;     /* bytes / P(sampled): copy volume estimate */
    uint8_t flags;          /* PF_ALLOC_SAMPLED / _EXACT / _NO_PYSTATE / _TRUNCATED / _STACK_REF */
    uint8_t ends;           /* what the copy's two ends are: PF_COPY_ENDS(src kind, dst kind); 0: not known
                               (a copy beyond the compare budget, or an older runtime's, which wrote 0) */
    uint16_t n_py;
    uint16_t n_native;
    uint16_t end_types;     /* PF_COPY_END_TYPES(src kind, dst kind), pf_obj_kind_t each, where the runtime
                               looked (the copies it linked, and reallocs: the block's kind carries on);
                               0: not known (a runtime before it wrote 0 here) */
} pf_rec_copy_t;

#define PF_COPY_END_TYPES(src, dst) ((uint16_t)((uint32_t)(src) | (uint32_t)(dst) << 8))
#define PF_COPY_END_TYPE_SRC(t) ((pf_obj_kind_t)((t) & 0xffu))
#define PF_COPY_END_TYPE_DST(t) ((pf_obj_kind_t)((t) >> 8 & 0xffu))

/* PF_REC_COPY_SHORT payload: the COPY of a busy copying program's usual copy, recorded exactly (est_bytes =
 * bytes, flags & PF_ALLOC_EXACT), of at most 4 GiB, with an interned stack (flags & PF_ALLOC_STACK_REF), not
 * linked for a verdict (ends = 0), its ends' kinds not found (end_types = 0) and of a kind no verdict names unlinked (memcpy, memmove, realloc: a CUDA
 * copy's id is named by its content-hash verdict): no record refers to it, so it carries no copy_id. 40
 * bytes with its header, against 72 for the same facts in a pf_rec_copy_t: on bench/workloads/copies.py,
 * whose 8 MB copies beyond the compare budget are nearly all such, a third of its full recording.
 * aux = kind | flags << 8. Readers treat it as the COPY that pf_copy_short_expand() gives (copy_id 0). */
typedef struct pf_rec_copy_short {
    uint64_t t_ns;
    uint64_t dst;
    uint64_t src;
    uint32_t bytes;
    uint32_t stack_id;
} pf_rec_copy_short_t;

#define PF_COPY_SHORT_AUX(kind, flags) ((uint16_t)((kind) | (uint32_t)(flags) << 8))

/* The Python object a copy's end lies in, when it is one whose type the runtime checks: the advice for a
 * redundant str.encode() or bytes.decode() is not the advice for bytes(buf). */
typedef enum pf_copy_end {
    PF_COPY_END_OTHER = 0,  /* another object, a buffer, or not tracked */
    PF_COPY_END_STR = 1,
    PF_COPY_END_BYTES = 2
} pf_copy_end_t;
#define PF_COPY_ENDS(src, dst) ((uint8_t)((src) | (dst) << 2))
#define PF_COPY_END_SRC(ends) ((pf_copy_end_t)((ends) & 3u))
#define PF_COPY_END_DST(ends) ((pf_copy_end_t)((ends) >> 2 & 3u))

/* Verdicts (PF_REC_VERDICT aux). */
typedef enum pf_verdict_kind {
    PF_VERDICT_REDUNDANT = 1,   /* the two buffers still held the same bytes when the first was freed */
    PF_VERDICT_MODIFIED = 2     /* one of them was written after the copy */
} pf_verdict_kind_t;

/* Evidence (pf_rec_verdict_t.evidence). */
#define PF_EVIDENCE_COMPARE_AT_FREE 1u
#define PF_EVIDENCE_WATCH 2u
#define PF_EVIDENCE_CONTENT_HASH 3u     /* the same bytes were sent again (a repeated host-to-device upload) */

/* PF_REC_VERDICT payload. aux = pf_verdict_kind_t. */
typedef struct pf_rec_verdict {
    uint64_t t_ns;
    uint64_t copy_id;
    uint64_t compared_bytes;
    uint32_t evidence;      /* PF_EVIDENCE_* */
    uint32_t reserved;
} pf_rec_verdict_t;

/* Records of watch/ (PF_REC_ACCESS_PAIR, PF_REC_WATCH_STATS) are specified in the section below, kept
 * by watch/'s authors. */
/* ---- watch records ---- */
/* A watched access and the access that repeated it (watch/: PMU sample -> hardware watchpoint -> trap).
 * aux = pf_access_kind_t. Every *resolved* watch is written, redundant or not, so the reporter has both the
 * numerator (flags & PF_ACCESS_REDUNDANT) and the per-line denominator (all pairs whose repeat or first
 * access is on that line). Non-redundant pairs carry no first stack (n_py_first = n_native_first = 0) to
 * keep the file small.
 *
 * PF_REC_ACCESS_PAIR payload
 *   OFFSET  SIZE  DESCRIPTION
 *   0       8     t_ns: time of the repeat (trap), since header.start_mono_ns
 *   8       8     addr: first byte watched (aligned to len)
 *   16      8     credited_bytes: len x samples this watch stands for (reservoir compensation, >= len)
 *   24      1     len: bytes compared (1, 2, 4 or 8)
 *   25      1     flags: PF_ACCESS_*
 *   26      2     n_py_first      Python frames of the first access (pf_rec_pyframe_t, innermost first)
 *   28      2     n_native_first  native IPs of the first access (innermost = the accessing instruction)
 *   30      2     n_py_repeat
 *   32      2     n_native_repeat
 *   34      6     reserved, zero
 *   40      ...   first py frames, first native IPs, repeat py frames, repeat native IPs, zero padding
 */
typedef enum pf_access_kind {
    PF_ACCESS_STORE = 1,        /* a store followed by a store to the same word */
    PF_ACCESS_LOAD = 2          /* a load followed by a load of the same word (no store between) */
} pf_access_kind_t;

#define PF_ACCESS_REDUNDANT 0x1u    /* same bytes stored again / same value loaded again */
#define PF_ACCESS_APPROX 0x2u       /* floating-point values equal within the relative tolerance, not bitwise */
#define PF_ACCESS_UNCERTAIN 0x4u    /* loads: the repeating instruction could not be decoded (kind assumed) */
#define PF_ACCESS_NO_PYSTATE 0x8u   /* the repeat ran on a thread without Python frames */

typedef struct pf_rec_access_pair {
    uint64_t t_ns;
    uint64_t addr;
    uint64_t credited_bytes;
    uint8_t len;
    uint8_t flags;
    uint16_t n_py_first;
    uint16_t n_native_first;
    uint16_t n_py_repeat;
    uint16_t n_native_repeat;
    uint16_t reserved[3];
} pf_rec_access_pair_t;

/* Watch modes (PF_REC_WATCH_STATS aux, bit set). */
#define PF_WATCH_MODE_STORES 0x1u
#define PF_WATCH_MODE_LOADS 0x2u
#define PF_WATCH_MODE_COPIES 0x4u   /* write watches on copies and their sources (PF_REC_COPY_WRITE) */

/* The first write that changed a watched word of a recorded copy (flags & PF_COPY_WRITE_DST) or of its
 * source, after the copy: proof that the copy was needed (verdict MODIFIED, evidence watch), with the
 * writer's call path. Written at most once per copy; a compare-at-free verdict for the same copy_id that
 * comes later is superseded by it. aux = 0.
 *
 * PF_REC_COPY_WRITE payload; then n_py pf_rec_pyframe_t and n_native uint64_t of the writer (innermost
 * first; the first native IP is the instruction after the write, as the trap reports it). */
#define PF_COPY_WRITE_DST 0x1u
#define PF_COPY_WRITE_NO_PYSTATE 0x8u   /* the writer ran on a thread without Python frames */
typedef struct pf_rec_copy_write {
    uint64_t t_ns;
    uint64_t copy_id;       /* of the PF_REC_COPY */
    uint64_t addr;          /* the watched word */
    uint8_t len;
    uint8_t flags;          /* PF_COPY_WRITE_* */
    uint16_t n_py;
    uint16_t n_native;
    uint16_t reserved;
} pf_rec_copy_write_t;

/* Address sources (pf_rec_watch_stats_t.source). */
#define PF_WATCH_SRC_DECODE 1u      /* overflow of a counting event, next memory instruction decoded */
#define PF_WATCH_SRC_PRECISE 2u     /* the data address of a PEBS or IBS sample */
#define PF_WATCH_SRC_SAMPLED 3u     /* the data address of a kernel event's sample (page faults) */

/* pf_rec_watch_stats_t.emulated */
#define PF_WATCH_EMU_STEPS 1u   /* single steps from a sample until the word is touched */
#define PF_WATCH_EMU_PAGES 2u   /* the word's page protected; a fault and one step per access to the page */

/* PF_REC_WATCH_STATS payload: one thread's running totals (each record supersedes that thread's previous
 * one; the reporter sums the last record of every thread). aux = PF_WATCH_MODE_* bits.
 * Fractions: store fraction = redundant store bytes / store bytes (both credited), likewise loads. */
typedef struct pf_rec_watch_stats {
    uint64_t t_ns;
    uint64_t period;            /* events per sample of the sampling event */
    uint32_t tid;
    uint8_t source;             /* PF_WATCH_SRC_* (a uint32 before emulated and budget_pct took its upper bytes,
                                   always 0 until then: files of either kind read the same) */
    uint8_t emulated;           /* PF_WATCH_EMU_*: how watchpoints were emulated (debug registers do not fire);
                                   0: debug registers (files from before the pages value wrote 1 for both) */
    uint8_t budget_pct;         /* emulated: most share of CPU time spent stepping (--watch-budget); 0: no cap */
    uint8_t widened;            /* times the thread's period was doubled (its samples took more than half its
                                   time): period is the doubled one, period >> widened the configured one
                                   (0 in files from before) */
    char event[32];             /* sampling event name, NUL terminated ("cycles", "task-clock", "r0229") */
    uint64_t samples;           /* sampling signals received */
    uint64_t samples_armed;     /* samples that led to an armed watchpoint */
    uint64_t dropped_filter;    /* address in pyflow's memory, TLS, a stack, or code filtered */
    uint64_t dropped_nomem;     /* no memory instruction of the wanted kind within the step limit */
    uint64_t dropped_busy;      /* arrived while a step walk or handler ran, or hibernating */
    uint64_t dropped_reservoir; /* every slot kept its watch */
    uint64_t traps;             /* watchpoint traps */
    uint64_t same_call;         /* repeats inside the same native call: ignored */
    uint64_t header_words;      /* pairs on object headers (refcounts): dropped at drain */
    uint64_t store_pairs, store_bytes, silent_store_bytes, approx_store_bytes;
    uint64_t load_pairs, load_bytes, redundant_load_bytes;
    uint64_t copy_watches;      /* copies whose words were put under a write watch (--watch=copies) */
    uint64_t copy_writes;       /* of those, copies a changing write was caught on (PF_REC_COPY_WRITE) */
} pf_rec_watch_stats_t;
/* ---- end of watch records ---- */

/* ---- aggregated recording (--aggregate) ----
 * A long run cannot keep a record per sampled allocation (0.5-2 GB an hour on a busy program). With
 * --aggregate the runtime keeps running totals per site (an interned stack, PF_REC_STACK, and a domain) and
 * writes, about once a second, a snapshot of the sites whose totals changed. Totals are cumulative since
 * the process started, so a reader keeps the last value seen per site, and a process killed at any time
 * loses only what changed since its last snapshot. Every snapshot is written by one thread, in parts of at
 * most PF_AGG_MAX_PART entries (all parts but the last carry PF_AGG_MORE); a reader applies a snapshot
 * once its last part is in. Frees after the interpreter began to finalize are not counted (what is live
 * then is live at exit, as the full recording reports it).
 *
 * PF_REC_AGG_SITES payload; then n_sites pf_rec_agg_site_t. aux = 0. */
#define PF_AGG_MORE 0x1u            /* another part of the same snapshot follows */
#define PF_AGG_FINAL 0x2u           /* written as the process ends (interpreter shutdown, _exit, exit) */
#define PF_AGG_MAX_PART 400u        /* entries a part holds at most (16 KiB: a chunk's tail is not wasted) */
#define PF_AGG_COPIES 0xffu         /* pf_rec_agg_site_t.kind: the copies made with that stack (memcpy
                                       family, realloc moves): alloc_bytes = bytes copied (estimated),
                                       alloc_count = copies; the free fields are 0 */
#define PF_AGG_FLOWS_KEPT 0x4u     /* the runtime writes PF_REC_AGG_FLOWS: copy flows and their verdicts are
                                       recorded (an older runtime's aggregated profile has none) */
#define PF_AGG_BY_SIZE 0x8u         /* since_ns is when the profile passed the size that switches a plain run
                                       to aggregated recording (PYFLOW_AGGREGATE_AFTER_BYTES), not a time asked */
typedef struct pf_rec_agg_snapshot {
    uint64_t t_ns;
    uint64_t live_bytes;        /* estimated bytes live in the process, every site */
    uint64_t alloc_bytes;       /* estimated bytes allocated since the start, every site */
    uint64_t since_ns;          /* when the runtime began aggregating: 0, or the --aggregate-after time
                                   (allocations before it have ALLOC/FREE records) */
    uint32_t n_sites;
    uint32_t flags;             /* PF_AGG_* */
} pf_rec_agg_snapshot_t;

typedef struct pf_rec_agg_site {
    uint32_t stack_id;          /* a PF_REC_STACK of this file; 0: an empty stack (no Python frames: start-up,
                                   shutdown, a native thread: see stack_flags) */
    uint8_t kind;               /* pf_domain_t of the allocations, or PF_AGG_COPIES */
    uint8_t stack_flags;        /* PF_ALLOC_NO_PYSTATE / PF_ALLOC_TRUNCATED of the stack */
    uint16_t reserved;
    uint64_t alloc_bytes;       /* since the start, estimated as an ALLOC's est_bytes */
    uint64_t alloc_count;       /* allocations, estimated */
    uint64_t free_bytes;        /* of those, freed (live = alloc_bytes - free_bytes) */
    uint64_t free_count;
} pf_rec_agg_site_t;

/* PF_REC_AGG_PEAK payload; then n_sites pf_rec_agg_peak_site_t: the sites whose live bytes at the peak
 * differ from the previous PEAK record's (a site not named keeps its value; one never named had 0). The
 * runtime takes this picture when the process's live bytes pass its last one by 1/128, so it is the true
 * peak within 1%. Written just before the snapshot that follows it (t_ns: when the peak was reached), in
 * parts like a snapshot. aux = 0. */
typedef struct pf_rec_agg_peak {
    uint64_t t_ns;
    uint64_t live_bytes;        /* the process's live bytes then */
    uint32_t n_sites;
    uint32_t flags;             /* PF_AGG_MORE */
} pf_rec_agg_peak_t;

typedef struct pf_rec_agg_peak_site {
    uint32_t stack_id;
    uint8_t kind;               /* pf_domain_t */
    uint8_t stack_flags;
    uint16_t reserved;
    uint64_t live_bytes;
} pf_rec_agg_peak_site_t;
/* PF_REC_AGG_FLOWS payload; then n_flows pf_rec_agg_flow_t, in parts like a snapshot (at most
 * PF_AGG_FLOWS_PART entries; PF_AGG_MORE), written just after the snapshot's last part. A flow is the copies
 * made with one stack from objects of one site (stack, domain) into objects of another, of one kind: what
 * the full recording's COPY records say one by one (the reporter's flow graph). Totals are cumulative since
 * the runtime began aggregating; a flow not named keeps its last totals. aux = 0.
 * Verdicts (compare-at-free, docs/verdicts.md) are counted on the flow of the copy they judge: the runtime
 * links a copy that fills its destination with a duplicate of its source, within the compare budget, as it
 * does by default, and counts the outcome when the first of the two objects is freed. */
#define PF_AGG_FLOWS_PART 180u      /* entries a part holds at most (16 KiB) */
#define PF_AGG_UNTRACKED 0xffu      /* a flow end's domain: no tracked object starts there (untracked memory,
                                       an object recorded before the switch, a slice deep inside one) */
typedef struct pf_rec_agg_flows {
    uint64_t t_ns;
    uint32_t n_flows;
    uint32_t flags;             /* PF_AGG_MORE */
} pf_rec_agg_flows_t;

typedef struct pf_rec_agg_flow {
    uint32_t flow_id;           /* the runtime's number of the flow: the same flow in every snapshot */
    uint32_t stack_id;          /* the copy's stack (0: empty) */
    uint32_t src_stack_id;      /* the stack the source object was allocated with */
    uint32_t dst_stack_id;      /* ... the destination object */
    uint8_t kind;               /* pf_copy_kind_t */
    uint8_t stack_flags;
    uint8_t src_domain;         /* pf_domain_t, or PF_AGG_UNTRACKED (then src_stack_id is 0) */
    uint8_t src_stack_flags;
    uint8_t dst_domain;
    uint8_t dst_stack_flags;
    uint8_t ends;               /* 1 << pf_copy_end_t of each linked copy's source, | the same << 4 of its
                                   destination */
    uint8_t reserved;
    uint64_t bytes, count;      /* copied (estimated as a COPY's est_bytes) and copies */
    uint64_t candidate_bytes, candidate_count;  /* of those, copies that filled their destination with a
                                                   duplicate of their source (pf_copy_rule.h) */
    uint64_t judged_bytes, judged_count;        /* candidates judged: bytes compared, verdicts */
    uint64_t redundant_bytes, redundant_count;  /* of those, found redundant */
} pf_rec_agg_flow_t;
/* ---- end of aggregated recording ---- */

static inline uint32_t pf_align8(uint32_t n) { return (n + 7u) & ~7u; }

/* A PF_REC_ALLOC_SHORT (payload s, header aux) as the ALLOC it stands for: out->a with its stack reference
 * in out->ref, right after it as in an ALLOC record. */
typedef struct pf_alloc_expanded {
    pf_rec_alloc_t a;
    pf_rec_stack_ref_t ref;
} pf_alloc_expanded_t;

_Static_assert(sizeof(pf_rec_alloc_t) % 8 == 0, "an ALLOC's stack reference follows its fixed part");

static inline const pf_rec_alloc_t *pf_alloc_short_expand(const pf_rec_alloc_short_t *s, uint16_t aux,
                                                          pf_alloc_expanded_t *out)
{
    out->a.t_ns = s->t_ns;
    out->a.addr = s->addr;
    out->a.size = s->size;
    out->a.est_bytes = s->size;
    out->a.domain = (uint8_t)(aux & 0xff);
    out->a.flags = (uint8_t)(aux >> 8);
    out->a.n_py = out->a.n_native = 0;
    out->a.reserved = 0;
    out->ref.stack_id = s->stack_id;
    out->ref.reserved = 0;
    return &out->a;
}

/* A PF_REC_COPY_SHORT (payload s, header aux) as the COPY it stands for, its stack reference after it. */
typedef struct pf_copy_expanded {
    pf_rec_copy_t c;
    pf_rec_stack_ref_t ref;
} pf_copy_expanded_t;

_Static_assert(sizeof(pf_rec_copy_t) % 8 == 0, "a COPY's stack reference follows its fixed part");

static inline const pf_rec_copy_t *pf_copy_short_expand(const pf_rec_copy_short_t *s, uint16_t aux,
                                                        pf_copy_expanded_t *out)
{
    out->c.t_ns = s->t_ns;
    out->c.copy_id = 0;
    out->c.dst = s->dst;
    out->c.src = s->src;
    out->c.bytes = s->bytes;
    out->c.est_bytes = s->bytes;
    out->c.flags = (uint8_t)(aux >> 8);
    out->c.ends = 0;
    out->c.n_py = out->c.n_native = 0;
    out->c.end_types = 0;    /* a short COPY is only written where none were found */
    out->ref.stack_id = s->stack_id;
    out->ref.reserved = 0;
    return &out->c;
}

#endif /* PF_FORMAT_H */
