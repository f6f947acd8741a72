/* pf_aggregate_flows.h - the copy flows of the aggregated recording (--aggregate; format: PF_REC_AGG_FLOWS in
 * core/pf_format.h): per (copy stack, source site, destination site, kind) running totals of the copies and
 * of the verdicts on them, so an aggregated profile keeps the flow graph and the redundant-copy verdicts.
 */
#ifndef PF_AGGREGATE_FLOWS_H
#define PF_AGGREGATE_FLOWS_H

#include <stdint.h>

#include "pf_format.h"

/* A copy's id that names a flow, not a COPY record: a verdict on it is counted on the flow (never written). */
#define PF_AGG_FLOW_COPY_ID (1ull << 63)

/* One end of a flow: the site of the tracked object there (its stack id and domain), or PF_AGG_UNTRACKED. */
typedef struct pf_agg_end {
    uint32_t stack_id;
    uint8_t domain;
    uint8_t stack_flags;
} pf_agg_end_t;

/* Counts a copy of est bytes (count copies) with stack stack_id/stack_flags from src into dst; candidate: it
 * filled its destination with a duplicate of the source; ends: its PF_COPY_ENDS when linked, else 0.
 * Returns the flow's copy id (PF_AGG_FLOW_COPY_ID | index) for a verdict, or 0 when the table is full (the
 * copy is still counted on its line). */
uint64_t pf_agg_flows_copy(uint32_t stack_id, uint8_t stack_flags, int kind, pf_agg_end_t src, pf_agg_end_t dst,
                           uint64_t est, uint64_t count, int candidate, uint8_t ends);

/* A verdict on a copy whose id pf_agg_flows_copy gave: compared bytes found equal (redundant) or not. */
void pf_agg_flows_verdict(uint64_t copy_id, int redundant, uint64_t compared);

/* The next flow (from *cursor, which starts at 0) whose totals changed since it was last given here, as its
 * record entry; 0 when there is none left. Called by the snapshot writer only (under its lock). */
int pf_agg_flows_next_changed(uint32_t *cursor, pf_rec_agg_flow_t *out);

/* Fork child: the parent's flows are forgotten, as its sites are. */
void pf_agg_flows_reset(void);

#endif /* PF_AGGREGATE_FLOWS_H */
