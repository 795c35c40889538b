/* The static tracepoint provider of probe-cost (probe-cost-tp.h). */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "probe-cost-tp.h"
