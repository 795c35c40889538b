/*
 * lttng list -u --path PATH --vars LOCATION: the variables and parameters
 * visible at a probe location, innermost scope first, then the statics and
 * globals of its compilation unit: each one's type, and where it lives
 * there (the recipe a var: context would record) or why it cannot be read
 * (optimized out at that address, a location that does not compile).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dwarf/dwarf.h"
#include "dwarf/dwarf-var.h"
#include "elf/elf.h"
#include "patch/analysis.h"
#include "spec/spec.h"

int dp_list_vars(const char *upath, const char *location)
{
	struct dp_err err = DP_ERR_INIT;
	struct dp_dwarf_var_info *v = NULL;
	struct dp_dwarf_at at = { 0 };
	const struct dp_function *fn;
	struct dp_location loc;
	struct dp_object *obj = NULL;
	struct dp_dwarf *dw;
	char *path = dp_abs_path(upath, &err);
	size_t n = 0, avail = 0;
	int ret = DP_CMD_ERROR;

	if (!path)
		goto fail;
	obj = dp_object_open(path);
	if (!obj) {
		dp_err_set(&err, -errno, "%s: %s", path, dp_elf_strerror(errno));
		goto fail;
	}
	if (dp_spec_location_parse(location, &loc, &err) ||
	    dp_spec_location_resolve(obj, path, &loc, &at.pc, &fn, &err))
		goto fail;
	at.elf = dp_elf_handle(dp_object_elf(obj));
	if (dp_dwarf_get(dp_object_elf(obj), &dw, &err))
		goto fail;
	at.dbg = dp_dwarf_handle(dw);
	if (dp_dwarf_vars_list(&at, &v, &n, &err))
		goto fail;
	printf("Variables at %s (0x%" PRIx64 ") in %s:\n", location, at.pc, path);
	printf("  %-20s  %-24s  %-30s  %s\n", "NAME", "TYPE", "SCOPE", "WHERE");
	for (size_t i = 0; i < n; i++) {
		printf("  %-20s  %-24s  %-30s  %s%s\n", v[i].name, v[i].type, v[i].scope,
		       v[i].available ? "" : "unavailable: ", v[i].where);
		avail += v[i].available;
	}
	printf("\n%zu variable%s, %zu readable at this address\n", n, n == 1 ? "" : "s", avail);
	ret = DP_CMD_SUCCESS;
	goto out;
fail:
	dp_err_print(&err);
out:
	free(v);
	dp_object_close(obj);
	free(path);
	return ret;
}
