/*
 * sites-oracle FILE FUNCTION: how the analysis library itself would install
 * a probe on each instruction of FUNCTION, one line per instruction:
 * "+0xOFF METHOD[: REASON]".  test-sites.sh holds `lttng list --sites` to it.
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

		if (dp_plan_site(obj, fn->start + fn->insn_off[i], &p))
			return 1;
		dp_plan_refuse_unsafe_traps(obj, &p, 1);
		printf("+0x%" PRIx32 " %s%s%s\n", fn->insn_off[i], dp_site_method_str(p.method),
		       p.method == DP_SITE_JUMP ? "" : ": ",
		       p.method == DP_SITE_JUMP ? "" : dp_reason_str(p.reason));
	}
	dp_object_close(obj);
	return 0;
}
