/* pf_objkind.h - what Python object a tracked block is (pf_obj_kind_t, core/pf_format.h), read only while
 * the block's memory is known to be the program's: at its free or realloc (before the allocator gets it
 * back) or at a copy into or out of it. Never at exit: an object freed behind the hooks' back may be gone. */
#ifndef PF_OBJKIND_H
#define PF_OBJKIND_H

#include <stdint.h>

#include "pf_format.h"
#include "pf_recorder.h"

/* Finds the interpreter's type objects (dlsym) and the layout of its dict keys (python_hex). */
void pf_objkind_init(uint32_t python_hex) PF_HIDDEN;

/* The kind of o (PF_OBJ_UNKNOWN for native or device memory and for Python memory that is none of the
 * kinds). o's memory must be valid for o->size bytes; pointers found in it are followed only through
 * process_vm_readv. */
pf_obj_kind_t pf_objkind_of(const struct pf_objinfo *o) PF_HIDDEN;

/* The kind of the tracked object at a copy's end addr: one whose first bytes hold it (as the copy rule
 * finds ends), or the dict keys table whose entries start there. For the copies no verdict links. */
pf_obj_kind_t pf_objkind_at(uintptr_t addr) PF_HIDDEN;

/* The object's type word right after its reference count, for the str / bytes test of the copy rule and
 * the content fingerprint: PF_OBJ_STR, PF_OBJ_BYTES, or PF_OBJ_UNKNOWN. Plain loads only (o valid). */
pf_obj_kind_t pf_objkind_str_bytes(const struct pf_objinfo *o) PF_HIDDEN;

/* A kind kept in an object's flags after its free (pf_objinfo_t.flags bits 24-31; the ALLOC flags use the
 * low byte): what a realloc's copy record says the moved block is. */
#define PF_OBJ_KIND_FLAGS_SHIFT 24u

#endif /* PF_OBJKIND_H */
