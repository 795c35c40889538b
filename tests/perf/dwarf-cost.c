/*
 * dwarf-cost: what DWARF costs to resolve a location, cold (the DWARF cache
 * empty: the debug file opened, its units walked and indexed) and warm (the
 * cache of a running daemon), next to the same location resolved without
 * DWARF (the out-of-line body alone: what --function cost before) in the
 * same run.  Times are medians of several runs, in milliseconds; the ELF
 * analysis of the object is done once before, so that each row is DWARF's
 * own share.  "Cold" means our cache is empty; the kernel's page cache is
 * warm after the first run, as it is on a machine that probes the object.
 *
 *   dwarf-cost [RUNS]
 *
 * One row per (object, what): --function NAME with its inlined copies, and
 * --probe FILE:LINE; objects without DWARF here are named and skipped.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dwarf/dwarf.h"
#include "dwarf/dwarf-var.h"
#include "elf/elf.h"
#include "patch/analysis.h"
#include "spec/spec.h"

#define MAX_RUNS 64

struct row {
	const char *path;
	const char *what;	/* a function's name, or FILE:LINE ("" LINE: the first with code) */
};

static const struct row rows[] = {
	{ "/lib/x86_64-linux-gnu/libc.so.6", "tcache_put" },
	{ "/lib/x86_64-linux-gnu/libc.so.6", "two_way_short_needle" },
	{ "/lib/x86_64-linux-gnu/libc.so.6", "malloc" },
	{ "/lib/x86_64-linux-gnu/libc.so.6", "malloc.c:" },
	{ "/lib/x86_64-linux-gnu/libstdc++.so.6", "_ZNSt6vectorIiSaIiEE17_M_realloc_insertIJRKiEEEvN9__gnu_cxx17__normal_iteratorIPiS1_EEDpOT_" },
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One resolution: 0 and the number of sites, or -errno with err. */
static int resolve(struct dp_object *obj, const char *path, const char *what,
		   enum dp_spec_copies_sel sel, size_t *nsites, struct dp_err *err)
{
	struct dp_location loc;
	int ret = dp_spec_location_parse(what, &loc, err);

	*nsites = 0;
	if (ret)
		return ret;
	if (loc.kind == DP_LOC_LINE) {
		uint64_t *addrs;

		ret = dp_spec_line_resolve(obj, path, &loc, &addrs, nsites, NULL, 0, err);
		if (!ret)
			free(addrs);
		return ret;
	}
	struct dp_spec_fn_sites fs;

	ret = dp_spec_function_sites(obj, path, &loc, sel, &fs, err);
	if (ret)
		return ret;
	*nsites = fs.nfns + fs.nplaced;
	dp_spec_fn_sites_release(&fs);
	return 0;
}

/* "malloc.c:" -> "malloc.c:N", N the first line of the file with code. */
static int first_line(struct dp_object *obj, const char *path, const char *what, char *out,
		      size_t size, struct dp_err *err)
{
	const struct dp_dwarf_row *r;
	struct dp_dwarf *dw;
	const char *file;
	size_t n;
	int ret;

	if (what[strlen(what) - 1] != ':') {
		snprintf(out, size, "%s", what);
		return 0;
	}
	snprintf(out, size, "%.*s", (int)strlen(what) - 1, what);
	ret = dp_dwarf_get(dp_object_elf(obj), &dw, err);
	if (!ret)
		ret = dp_spec_source_file(obj, path, out, &file, err);
	if (!ret)
		ret = dp_dwarf_file_rows(dw, file, 1, UINT32_MAX, &r, &n, err);
	if (ret)
		return ret;
	if (!n)
		return dp_err_set(err, -ENOENT, "%s has no line with code", file);
	snprintf(out, size, "%.*s:%" PRIu32, (int)strlen(what) - 1, what, r[n / 2].line);
	return 0;
}

/* var: contexts compiled at a function's entry (what the daemon does for
 * each site of an event in each process). */
static const struct row var_rows[] = {
	{ "/lib/x86_64-linux-gnu/libc.so.6", "malloc var:bytes" },
	{ "/lib/x86_64-linux-gnu/libc.so.6", "free var:mem" },
	{ "/lib/x86_64-linux-gnu/libc.so.6", "malloc args" },
};

/* One var: (or args) at fn's entry: 0, or -errno with err. */
static int var_once(struct dp_object *obj, const char *path, const char *fn, const char *spec,
		    struct dp_err *err)
{
	struct dp_dwarf_at at = { .elf = dp_elf_handle(dp_object_elf(obj)) };
	struct dp_ctx ctx[DP_DWARF_ARGS_MAX];
	const struct dp_function *f;
	struct dp_location loc;
	struct dp_var_expr e;
	struct dp_dwarf *dw;
	size_t n;
	int ret = dp_spec_location_parse(fn, &loc, err);

	if (!ret)
		ret = dp_spec_function_entry(obj, path, &loc, &f, err);
	if (!ret)
		ret = dp_dwarf_get(dp_object_elf(obj), &dw, err);
	if (ret)
		return ret;
	at.dbg = dp_dwarf_handle(dw);
	at.pc = f->start;
	if (!strcmp(spec, "args"))
		return dp_dwarf_args_compile(&at, ctx, DP_DWARF_ARGS_MAX, &n, err);
	ret = dp_var_parse(spec, &e, err);
	return ret ? ret : dp_dwarf_var_compile(&at, &e, ctx, err);
}

static void var_costs(int runs)
{
	printf("\ndwarf-cost: milliseconds to compile a var: context at a function's entry, "
	       "median of %d runs (cold: DWARF cache empty, the lookup included)\n\n", runs);
	printf("%-28s %-40s %9s %9s\n", "OBJECT", "FUNCTION CONTEXT", "COLD", "WARM");
	for (size_t i = 0; i < sizeof(var_rows) / sizeof(var_rows[0]); i++) {
		const char *path = var_rows[i].path, *base_name = strrchr(path, '/') + 1;
		struct dp_object *obj = dp_object_open(path);
		struct dp_err err = DP_ERR_INIT;
		double cold[MAX_RUNS], warm[MAX_RUNS], t;
		char fn[64];
		const char *spec = strchr(var_rows[i].what, ' ') + 1;
		size_t n = 0;
		int ret = 0;

		if (!obj) {
			printf("%-28s %s\n", base_name, strerror(errno));
			continue;
		}
		snprintf(fn, sizeof(fn), "%.*s", (int)(spec - 1 - var_rows[i].what),
			 var_rows[i].what);
		dp_object_functions(obj, &(const struct dp_function *){ NULL }, &n);
		for (int r = 0; r < runs && !ret; r++) {
			dp_dwarf_cache_clear();
			t = now_ms();
			ret = var_once(obj, path, fn, spec, &err);
			cold[r] = now_ms() - t;
			t = now_ms();
			ret = ret ? ret : var_once(obj, path, fn, spec, &err);
			warm[r] = now_ms() - t;
		}
		if (ret)
			printf("%-28s %-40s error: %.160s\n", base_name, var_rows[i].what, err.msg);
		else
			printf("%-28s %-40s %9.2f %9.3f\n", base_name, var_rows[i].what,
			       median(cold, runs), median(warm, runs));
		dp_object_close(obj);
		dp_dwarf_cache_clear();
	}
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 5;

	if (runs < 1 || runs > MAX_RUNS)
		runs = 5;
	printf("dwarf-cost: milliseconds to resolve a location, median of %d runs\n", runs);
	printf("  base: without DWARF (the out-of-line body, or its absence; nothing for a "
	       "line); cold: DWARF cache empty; warm: cached; SITES: bodies and inlined copies "
	       "(a line: its address blocks)\n\n");
	printf("%-28s %-40s %6s %8s %9s %9s %9s %9s\n", "OBJECT", "LOCATION", "SITES", "BASE",
	       "COLD", "WARM", "COLD/BASE", "WARM/BASE");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const char *path = rows[i].path, *base_name = strrchr(path, '/') + 1;
		struct dp_err err = DP_ERR_INIT;
		struct dp_object *obj = dp_object_open(path);
		double base[MAX_RUNS], cold[MAX_RUNS], warm[MAX_RUNS], t;
		char what[600], shown[41];
		struct dp_dwarf *dw;
		size_t n = 0;
		int ret = 0;

		if (!obj) {
			printf("%-28s %s\n", base_name, strerror(errno));
			continue;
		}
		snprintf(shown, sizeof(shown), "%.40s", rows[i].what);
		/* The ELF analysis once, outside every measure. */
		dp_object_functions(obj, &(const struct dp_function *){ NULL }, &n);
		if (dp_dwarf_get(dp_object_elf(obj), &dw, &err) ||
		    first_line(obj, path, rows[i].what, what, sizeof(what), &err)) {
			printf("%-28s %-40s no DWARF here: %.160s...\n", base_name, shown, err.msg);
			dp_object_close(obj);
			dp_dwarf_cache_clear();
			continue;
		}
		snprintf(shown, sizeof(shown), "%.40s", what);
		for (int r = 0; r < runs && !ret; r++) {
			bool line = strchr(what, ':') != NULL;

			/* Without DWARF, a function inlined everywhere is not
			 * found: the time to say so is the base. */
			t = now_ms();
			if (!line)
				resolve(obj, path, what, DP_SPEC_COPIES_OUTLINE, &n, &err);
			base[r] = now_ms() - t;
			dp_dwarf_cache_clear();
			t = now_ms();
			ret = ret ? ret : resolve(obj, path, what, DP_SPEC_COPIES_ALL, &n, &err);
			cold[r] = now_ms() - t;
			t = now_ms();
			ret = ret ? ret : resolve(obj, path, what, DP_SPEC_COPIES_ALL, &n, &err);
			warm[r] = now_ms() - t;
		}
		if (ret) {
			printf("%-28s %-40s error: %s\n", base_name, shown, err.msg);
		} else {
			double b = median(base, runs), c = median(cold, runs), w = median(warm, runs);

			printf("%-28s %-40s %6zu %8.3f %9.2f %9.3f %9.0f %9.2f\n", base_name, shown,
			       n, b, c, w, b > 0.0005 ? c / b : 0, b > 0.0005 ? w / b : 0);
		}
		dp_object_close(obj);
		dp_dwarf_cache_clear();
	}
	var_costs(runs);
	return 0;
}
