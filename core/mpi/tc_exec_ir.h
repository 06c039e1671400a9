/* The executor's tables of a schedule of the IR, for the callers that link
 * the core: the PMPI library and the packet simulator (a generated routine
 * has static tables instead).  tc_op and tcx_op share their layout. */
#ifndef TC_EXEC_IR_H
#define TC_EXEC_IR_H

#include "tc_exec.h"
#include "topocoll/topocoll.h"

static inline tcx_schedule tcx_tables_of(const tc_schedule *s)
{
    tcx_schedule t = {tc_schedule_algorithm(s), tc_schedule_num_ranks(s), tc_schedule_num_steps(s),
                      (const long long *)tc_schedule_step_begins(s), (const tcx_op *)tc_schedule_ops(s),
                      tc_schedule_blocks(s), tc_schedule_num_syncs(s), (const long long *)tc_schedule_syncs(s)};
    return t;
}

#endif
