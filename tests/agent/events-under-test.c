/*
 * The agent's runtime event classes (src/lib/lttng-ust-dynprobe/events.c),
 * built into the test programs: the agent library itself exports only its
 * trampoline entry points.
 */
#include "events.c"
