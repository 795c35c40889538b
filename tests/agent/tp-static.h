/*
 * A static LTTng-UST tracepoint recording one integer: the yardstick the
 * runtime classes' record path is measured against (events-emit bench).
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER dptest_static

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./tp-static.h"

#if !defined(DP_TESTS_TP_STATIC_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define DP_TESTS_TP_STATIC_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(dptest_static, tick,
	LTTNG_UST_TP_ARGS(uint64_t, v),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint64_t, v, v))
)

#endif /* DP_TESTS_TP_STATIC_H */

#include <lttng/tracepoint-event.h>
