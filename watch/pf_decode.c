/* pf_decode.c - the instruction decoder of the watch engine's address source where the PMU gives no data
 * address (no PEBS/IBS: AMD in a VM). A sample stops the thread *before* an instruction; decoding it and
 * computing its effective address from the signal context tells which word it is about to access.
 *
 * Only the one explicit memory operand of an instruction is used: implicit and hidden operands (push, pop,
 * call, string instructions with or without rep) write somewhere else than Zydis's [rsp]/[rdi] says or
 * touch many words, and lea (AGEN), MIB and VSIB (gathers) do not access one word; all are reported as
 * PF_WATCH_DEC_NOMEM and counted by the engine. Zydis looks registers up by exact name, so the 32-bit
 * aliases are filled too (an addr32 prefix uses them); FS/GS bases are added here because Zydis ignores
 * segments. Everything is async-signal-safe: the decoder is read-only after init, no allocation.
 *
 * libZydis is loaded by dlopen when watch starts (as libpfm4 is, pf_pfm.c), not linked: linked, it was
 * mapped into every profiled program, its pages (0.1 MiB) in the RSS of runs that watch nothing.
 */
#include "pf_watch_int.h"

#include <Zydis/Zydis.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define PF_ZYDIS_SONAME "libZydis.so.4.0"   /* Zydis 4's ABI: the name Debian's libzydis4.0 installs */

static ZydisDecoder pf_decoder;
static int pf_decoder_ready;
static struct {
    __typeof__(&ZydisDecoderInit) init;
    __typeof__(&ZydisDecoderDecodeFull) decode;
    __typeof__(&ZydisCalcAbsoluteAddressEx) address;
} zydis;
static char failure[160];

int pf_watch_decode_init(void)
{
    if (pf_decoder_ready)
        return 0;
    void *lib = dlopen(PF_ZYDIS_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(failure, sizeof failure, "%s cannot be loaded (%s): install libzydis4.0", PF_ZYDIS_SONAME,
                 dlerror());
        return -ENOENT;
    }
    zydis.init = (__typeof__(zydis.init))dlsym(lib, "ZydisDecoderInit");
    zydis.decode = (__typeof__(zydis.decode))dlsym(lib, "ZydisDecoderDecodeFull");
    zydis.address = (__typeof__(zydis.address))dlsym(lib, "ZydisCalcAbsoluteAddressEx");
    if (!zydis.init || !zydis.decode || !zydis.address) {
        snprintf(failure, sizeof failure, "%s lacks the functions pyflow uses", PF_ZYDIS_SONAME);
        dlclose(lib);
        return -ENOSYS;
    }
    if (ZYAN_FAILED(zydis.init(&pf_decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) {
        snprintf(failure, sizeof failure, "the Zydis decoder could not be initialized");
        return -EINVAL;
    }
    pf_decoder_ready = 1;    /* the library stays loaded: the handlers decode with it */
    return 0;
}

const char *pf_watch_decode_failure(void) { return failure; }

void pf_watch_regs_from_uc(const ucontext_t *uc, uint64_t fs_base, uint64_t gs_base, pf_watch_regs_t *r)
{
    const greg_t *g = uc->uc_mcontext.gregs;
    r->gpr[0] = (uint64_t)g[REG_RAX];
    r->gpr[1] = (uint64_t)g[REG_RCX];
    r->gpr[2] = (uint64_t)g[REG_RDX];
    r->gpr[3] = (uint64_t)g[REG_RBX];
    r->gpr[4] = (uint64_t)g[REG_RSP];
    r->gpr[5] = (uint64_t)g[REG_RBP];
    r->gpr[6] = (uint64_t)g[REG_RSI];
    r->gpr[7] = (uint64_t)g[REG_RDI];
    r->gpr[8] = (uint64_t)g[REG_R8];
    r->gpr[9] = (uint64_t)g[REG_R9];
    r->gpr[10] = (uint64_t)g[REG_R10];
    r->gpr[11] = (uint64_t)g[REG_R11];
    r->gpr[12] = (uint64_t)g[REG_R12];
    r->gpr[13] = (uint64_t)g[REG_R13];
    r->gpr[14] = (uint64_t)g[REG_R14];
    r->gpr[15] = (uint64_t)g[REG_R15];
    r->fs_base = fs_base;
    r->gs_base = gs_base;
}

/* Zydis's register context is large (one value per register enum); the handler runs on the alternate
 * stack (64 KiB), so a stack copy is fine. Only what an address can use is filled. */
static void fill_context(ZydisRegisterContext *ctx, const pf_watch_regs_t *r)
{
    static const ZydisRegister r64[16] = {
        ZYDIS_REGISTER_RAX, ZYDIS_REGISTER_RCX, ZYDIS_REGISTER_RDX, ZYDIS_REGISTER_RBX,
        ZYDIS_REGISTER_RSP, ZYDIS_REGISTER_RBP, ZYDIS_REGISTER_RSI, ZYDIS_REGISTER_RDI,
        ZYDIS_REGISTER_R8, ZYDIS_REGISTER_R9, ZYDIS_REGISTER_R10, ZYDIS_REGISTER_R11,
        ZYDIS_REGISTER_R12, ZYDIS_REGISTER_R13, ZYDIS_REGISTER_R14, ZYDIS_REGISTER_R15};
    static const ZydisRegister r32[16] = {
        ZYDIS_REGISTER_EAX, ZYDIS_REGISTER_ECX, ZYDIS_REGISTER_EDX, ZYDIS_REGISTER_EBX,
        ZYDIS_REGISTER_ESP, ZYDIS_REGISTER_EBP, ZYDIS_REGISTER_ESI, ZYDIS_REGISTER_EDI,
        ZYDIS_REGISTER_R8D, ZYDIS_REGISTER_R9D, ZYDIS_REGISTER_R10D, ZYDIS_REGISTER_R11D,
        ZYDIS_REGISTER_R12D, ZYDIS_REGISTER_R13D, ZYDIS_REGISTER_R14D, ZYDIS_REGISTER_R15D};
    for (int i = 0; i < 16; i++) {
        ctx->values[r64[i]] = r->gpr[i];
        ctx->values[r32[i]] = r->gpr[i] & 0xffffffffu;
    }
}

/* The single explicit memory operand of a decoded instruction, or NULL (none, several, or not a real
 * access: lea, MIB, VSIB). */
static const ZydisDecodedOperand *memory_operand(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops)
{
    const ZydisDecodedOperand *found = NULL;
    for (unsigned i = 0; i < in->operand_count; i++) {
        const ZydisDecodedOperand *op = &ops[i];
        if (op->type != ZYDIS_OPERAND_TYPE_MEMORY)
            continue;
        if (op->visibility != ZYDIS_OPERAND_VISIBILITY_EXPLICIT)
            return NULL;        /* string ops, push/pop forms with an explicit operand: not one word */
        if (op->mem.type != ZYDIS_MEMOP_TYPE_MEM)
            return NULL;
        if (found)
            return NULL;
        found = op;
    }
    return found;
}

static int access_of(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *op, uint64_t pc,
                     const pf_watch_regs_t *regs, pf_watch_access_t *out)
{
    /* Instructions whose explicit memory operand is accompanied by a hidden stack access (push [m],
     * pop [m], call [m]) still access [m] explicitly; keep them. */
    ZydisRegisterContext ctx;
    fill_context(&ctx, regs);
    ZyanU64 ea = 0;
    if (ZYAN_FAILED(zydis.address(in, op, pc, &ctx, &ea)))
        return PF_WATCH_DEC_NOMEM;
    if (op->mem.segment == ZYDIS_REGISTER_FS)
        ea += regs->fs_base;
    else if (op->mem.segment == ZYDIS_REGISTER_GS)
        ea += regs->gs_base;
    unsigned kind = 0;
    if (op->actions & ZYDIS_OPERAND_ACTION_MASK_READ)
        kind |= PF_WATCH_ACC_LOAD;
    if (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE)
        kind |= PF_WATCH_ACC_STORE;
    if (!kind)
        return PF_WATCH_DEC_NOMEM;  /* prefetch, clflush: no data access */
    if (in->mnemonic == ZYDIS_MNEMONIC_PREFETCH || in->mnemonic == ZYDIS_MNEMONIC_PREFETCHW ||
        in->mnemonic == ZYDIS_MNEMONIC_PREFETCHNTA || in->mnemonic == ZYDIS_MNEMONIC_PREFETCHT0 ||
        in->mnemonic == ZYDIS_MNEMONIC_PREFETCHT1 || in->mnemonic == ZYDIS_MNEMONIC_PREFETCHT2 ||
        in->mnemonic == ZYDIS_MNEMONIC_CLFLUSH || in->mnemonic == ZYDIS_MNEMONIC_CLFLUSHOPT)
        return PF_WATCH_DEC_NOMEM;
    uint32_t elem = op->element_size / 8;
    if (op->element_type == ZYDIS_ELEMENT_TYPE_FLOAT32 || op->element_type == ZYDIS_ELEMENT_TYPE_FLOAT64)
        kind |= PF_WATCH_ACC_FLOAT;
    out->ea = ea;
    out->size = op->size / 8;
    out->kind = kind;
    out->insn_len = in->length;
    out->elem_size = elem;
    return out->size ? 0 : PF_WATCH_DEC_NOMEM;
}

int pf_watch_decode(const uint8_t *code, size_t len, uint64_t pc, const pf_watch_regs_t *regs,
                    pf_watch_access_t *out)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!pf_decoder_ready || ZYAN_FAILED(zydis.decode(&pf_decoder, code, len, &in, ops)))
        return PF_WATCH_DEC_BAD;
    const ZydisDecodedOperand *op = memory_operand(&in, ops);
    if (!op)
        return PF_WATCH_DEC_NOMEM;
    return access_of(&in, op, pc, regs, out);
}

int pf_watch_decode_string_store(const uint8_t *code, size_t len, uint64_t pc, const pf_watch_regs_t *regs,
                                 pf_watch_access_t *out)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!pf_decoder_ready || ZYAN_FAILED(zydis.decode(&pf_decoder, code, len, &in, ops)))
        return PF_WATCH_DEC_BAD;
    for (unsigned i = 0; i < in.operand_count; i++) {
        const ZydisDecodedOperand *op = &ops[i];
        if (op->type == ZYDIS_OPERAND_TYPE_MEMORY && op->visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN &&
            (op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) &&
            (op->mem.base == ZYDIS_REGISTER_RDI || op->mem.base == ZYDIS_REGISTER_EDI)) {
            int rc = access_of(&in, op, pc, regs, out);
            if (rc == 0)
                out->kind = PF_WATCH_ACC_STORE;     /* movs also loads [rsi]: the store is what is watched */
            return rc;
        }
    }
    return PF_WATCH_DEC_NOMEM;
}

unsigned pf_watch_decode_prev(const uint8_t before[15], uint64_t next_pc, const pf_watch_regs_t *regs,
                              uint64_t addr, uint32_t len)
{
    /* x86 cannot be decoded backwards for sure; instead try every start 1..15 bytes back whose
     * instruction ends exactly at next_pc and whose operand covers the watched word. The registers are
     * those after the instruction ran, so an instruction that overwrote its own base register (mov rax,
     * [rax]) does not match: the caller then treats the access as unknown. */
    unsigned kind = 0;
    int found = 0;
    if (!pf_decoder_ready)
        return 0;
    for (unsigned back = 1; back <= 15; back++) {
        ZydisDecodedInstruction in;
        ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
        const uint8_t *p = before + 15 - back;
        if (ZYAN_FAILED(zydis.decode(&pf_decoder, p, back, &in, ops)) || in.length != back)
            continue;
        const ZydisDecodedOperand *op = memory_operand(&in, ops);
        pf_watch_access_t acc;
        if (!op || access_of(&in, op, next_pc - back, regs, &acc) != 0)
            continue;
        if (acc.ea >= addr + len || acc.ea + acc.size <= addr)
            continue;
        unsigned k = acc.kind & (PF_WATCH_ACC_LOAD | PF_WATCH_ACC_STORE);
        if (found && k != kind)
            return 0;
        kind = k;
        found = 1;
    }
    return kind;
}
