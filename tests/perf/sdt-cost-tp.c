/* The static tracepoint provider of sdt-cost (sdt-cost-tp.h). */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "sdt-cost-tp.h"
