/*
 * The yardsticks of sdt-cost: static LTTng-UST tracepoints recording the
 * same three integers as the SDT probes, one enabled in the session, one not.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER dpsdt

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./sdt-cost-tp.h"

#if !defined(DP_TESTS_SDT_COST_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define DP_TESTS_SDT_COST_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT_CLASS(dpsdt, three,
	LTTNG_UST_TP_ARGS(uint64_t, a, uint64_t, b, uint64_t, c),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint64_t, a, a)
		lttng_ust_field_integer(uint64_t, b, b)
		lttng_ust_field_integer(uint64_t, c, c)
	)
)
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(dpsdt, three, dpsdt, on,
	LTTNG_UST_TP_ARGS(uint64_t, a, uint64_t, b, uint64_t, c))
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(dpsdt, three, dpsdt, off,
	LTTNG_UST_TP_ARGS(uint64_t, a, uint64_t, b, uint64_t, c))

#endif /* DP_TESTS_SDT_COST_TP_H */

#include <lttng/tracepoint-event.h>
