/*
 * The yardstick of probe-cost: a static LTTng-UST tracepoint recording one
 * integer, compiled into the program.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER dpcost

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./probe-cost-tp.h"

#if !defined(DP_TESTS_PROBE_COST_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define DP_TESTS_PROBE_COST_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(dpcost, tick,
	LTTNG_UST_TP_ARGS(uint64_t, v),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint64_t, v, v))
)

#endif /* DP_TESTS_PROBE_COST_TP_H */

#include <lttng/tracepoint-event.h>
