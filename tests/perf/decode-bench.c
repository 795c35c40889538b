/*
 * decode-bench: how fast our x86-64 decoder is next to Zydis, measured in the
 * same run on the same bytes: every function of an ELF object (libc by
 * default), decoded linearly from start to end, length only for Zydis (no
 * operands), several repetitions, best and median.  Prints numbers, never
 * fails on them: only the ratio means something across machines.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <Zydis/Zydis.h>

#include "elf/elf.h"
#include "x86/insn.h"

#define PROG "decode-bench"
#define DEFAULT_FILE "/usr/lib/x86_64-linux-gnu/libc.so.6"

struct code_range {
	const uint8_t *bytes;
	uint64_t size;
};

/* Keeps the compiler from dropping decodes whose results are unused. */
static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One pass over all ranges; returns positions decoded, *ns the time. */
static uint64_t pass_ours(const struct code_range *r, size_t n, uint64_t *ns)
{
	uint64_t count = 0, sum = 0, t0 = now_ns();
	struct dp_insn in;

	for (size_t i = 0; i < n; i++) {
		for (uint64_t off = 0; off < r[i].size; count++) {
			if (dp_insn_decode(r[i].bytes + off, r[i].size - off, &in)) {
				off++;
				continue;
			}
			off += in.len;
			sum += in.attr;
		}
	}
	*ns = now_ns() - t0;
	sink += sum;
	return count;
}

static uint64_t pass_zydis(const ZydisDecoder *dec, const struct code_range *r, size_t n,
			   uint64_t *ns)
{
	uint64_t count = 0, sum = 0, t0 = now_ns();
	ZydisDecodedInstruction zi;

	for (size_t i = 0; i < n; i++) {
		for (uint64_t off = 0; off < r[i].size; count++) {
			if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(dec, NULL, r[i].bytes + off,
									r[i].size - off, &zi))) {
				off++;
				continue;
			}
			off += zi.length;
			sum += zi.attributes;
		}
	}
	*ns = now_ns() - t0;
	sink += sum;
	return count;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double median(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), u64_cmp);
	return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: " PROG " [--reps N] [FILE]\n"
		"Decodes every function of FILE (default " DEFAULT_FILE ")\n"
		"with our decoder and with Zydis, N times each (default 15), and prints\n"
		"ns per instruction (best and median) and the ratio ours/zydis.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "reps", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = DEFAULT_FILE;
	uint64_t *t_ours, *t_zydis, n_ours = 0, n_zydis = 0, bytes = 0, ns;
	const struct dp_func *funcs;
	struct code_range *ranges;
	unsigned long reps = 15;
	double best_o, best_z, med_o, med_z;
	ZydisDecoder dec;
	struct dp_elf *elf;
	size_t nfuncs, n = 0;
	char *end;
	int c, err;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			errno = 0;
			reps = strtoul(optarg, &end, 0);
			if (errno || *end || !reps || reps > 100000) {
				fprintf(stderr, PROG ": invalid repetition count '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind + 1 < argc) {
		usage(stderr);
		return 2;
	}
	if (optind < argc)
		path = argv[optind];

	elf = dp_elf_open(path);
	if (!elf) {
		fprintf(stderr, PROG ": %s: %s\n", path, dp_elf_strerror(errno));
		return 2;
	}
	err = dp_elf_funcs(elf, &funcs, &nfuncs);
	if (err) {
		fprintf(stderr, PROG ": %s: %s\n", path, dp_elf_strerror(-err));
		return 2;
	}
	ranges = calloc(nfuncs ? nfuncs : 1, sizeof(*ranges));
	t_ours = calloc(reps, sizeof(*t_ours));
	t_zydis = calloc(reps, sizeof(*t_zydis));
	if (!ranges || !t_ours || !t_zydis) {
		fprintf(stderr, PROG ": out of memory\n");
		return 2;
	}
	for (size_t i = 0; i < nfuncs; i++) {
		const uint8_t *code = dp_elf_code(elf, funcs[i].start, funcs[i].size);

		if (!code)
			continue;
		ranges[n].bytes = code;
		ranges[n].size = funcs[i].size;
		bytes += funcs[i].size;
		n++;
	}
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64,
					   ZYDIS_STACK_WIDTH_64))) {
		fprintf(stderr, PROG ": cannot initialize Zydis\n");
		return 2;
	}

	/* One untimed pass each: page faults and cold caches are not decoding. */
	pass_ours(ranges, n, &ns);
	pass_zydis(&dec, ranges, n, &ns);
	/* Alternating which goes first evens out frequency drift. */
	for (unsigned long r = 0; r < reps; r++) {
		if (r % 2) {
			n_zydis = pass_zydis(&dec, ranges, n, &t_zydis[r]);
			n_ours = pass_ours(ranges, n, &t_ours[r]);
		} else {
			n_ours = pass_ours(ranges, n, &t_ours[r]);
			n_zydis = pass_zydis(&dec, ranges, n, &t_zydis[r]);
		}
	}

	if (!n_ours || !n_zydis) {
		fprintf(stderr, PROG ": %s: no code to decode\n", path);
		return 2;
	}
	med_o = median(t_ours, reps);
	med_z = median(t_zydis, reps);
	best_o = (double)t_ours[0];
	best_z = (double)t_zydis[0];
	printf(PROG ": %s: %zu functions, %" PRIu64 " bytes, %lu repetitions\n", path, n, bytes,
	       reps);
	printf("%-8s %14s %16s %16s\n", "decoder", "instructions", "best ns/insn",
	       "median ns/insn");
	printf("%-8s %14" PRIu64 " %16.2f %16.2f\n", "ours", n_ours,
	       best_o / (double)n_ours, med_o / (double)n_ours);
	printf("%-8s %14" PRIu64 " %16.2f %16.2f\n", "zydis", n_zydis,
	       best_z / (double)n_zydis, med_z / (double)n_zydis);
	printf("ratio ours/zydis (per instruction): best %.2f, median %.2f\n",
	       (best_o / (double)n_ours) / (best_z / (double)n_zydis),
	       (med_o / (double)n_ours) / (med_z / (double)n_zydis));
	free(ranges);
	free(t_ours);
	free(t_zydis);
	dp_elf_close(elf);
	return 0;
}
