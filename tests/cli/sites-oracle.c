/*
 * sites-oracle FILE FUNCTION: how the analysis library itself would install
 * a probe on each instruction of FUNCTION, one line per instruction:
 * "+0xOFF METHOD[: REASON]" (a redirect or a led window: how it leads).  test-sites.sh holds `lttng list --sites` to it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "patch/analysis.h"
#include "patch/plan.h"

int main(int argc, char **argv)
{
	const struct dp_function *fn;
	struct dp_object *obj;

	if (argc != 3) {
		fprintf(stderr, "usage: sites-oracle FILE FUNCTION\n");
		return 2;
	}
	obj = dp_object_open(argv[1]);
	if (!obj) {
		fprintf(stderr, "sites-oracle: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	fn = dp_object_function_by_name(obj, argv[2]);
	if (!fn) {
		fprintf(stderr, "sites-oracle: no function %s\n", argv[2]);
		return 1;
	}
	for (uint32_t i = 0; i < fn->ninsns; i++) {
		struct dp_patch p;
		char led[160];

		/* As lttng-dynprobed plans (plan.h): branches led, each patch
		 * standing alone. */
		if (dp_plan_site_flags(obj, fn->start + fn->insn_off[i],
				       DP_PLAN_REDIRECT | DP_PLAN_ALONE, &p))
			return 1;
		dp_plan_refuse_unsafe_traps(obj, &p, 1);
		dp_plan_led_str(&p, led, sizeof(led));
		if (p.method == DP_SITE_REDIRECT)
			printf("+0x%" PRIx32 " %s\n", fn->insn_off[i], led);
		else if (p.method == DP_SITE_JUMP)
			printf("+0x%" PRIx32 " jump%s%s\n", fn->insn_off[i], led[0] ? ": " : "", led);
		else
			printf("+0x%" PRIx32 " %s: %s\n", fn->insn_off[i],
			       dp_site_method_str(p.method), dp_reason_str(p.reason));
	}
	dp_object_close(obj);
	return 0;
}
