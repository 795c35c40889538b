/* The probe provider of tp-static.h, built into events-emit. */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#include "tp-static.h"
