/*
 * The CFI tables (src/common/dynprobe/elf/cfi-table.c) against libdw's CFI
 * interpreter, the oracle: for every address of every FDE of libc.so.6 and
 * of a test program (this one, and any file named on the command line), the
 * table's row must say what dwarf_cfi_addrframe says there: the same CFA
 * rule, return address and rbp slots, or STOP exactly where libdw's rule is
 * one a row cannot hold.  Both are piecewise constant, so the walk visits
 * every point where either changes (dwarf_frame_info gives libdw's ranges),
 * and checks the table's own lookup (its block index) at each end of them.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/cfi-table.h"
#include "elf/ehread.h"

static int tests;

/* CFA + N, as libdw spells a saved register's slot. */
static bool cfa_plus(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (!nops || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (nops == 1) {
		*off = 0;
		return true;
	}
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	if (nops == 3 && (ops[1].atom == DW_OP_consts || ops[1].atom == DW_OP_constu) &&
	    ops[2].atom == DW_OP_plus) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	return false;
}

static bool plt_expr(const Dwarf_Op *o, size_t n, int32_t *off, uint8_t *arg)
{
	if (n != 9 || o[0].atom != DW_OP_breg7 || o[1].atom != DW_OP_breg16 || o[1].number ||
	    o[2].atom != DW_OP_lit15 || o[3].atom != DW_OP_and || o[4].atom < DW_OP_lit0 ||
	    o[4].atom > DW_OP_lit15 || o[5].atom != DW_OP_ge || o[6].atom != DW_OP_lit3 ||
	    o[7].atom != DW_OP_shl || o[8].atom != DW_OP_plus)
		return false;
	*off = (int32_t)o[0].number;
	*arg = (uint8_t)(o[4].atom - DW_OP_lit0);
	return true;
}

/* The row libdw's answer at pc makes (pc excluded), and its range. */
static void oracle(Dwarf_CFI *cfi, uint64_t pc, struct dp_cfi_row *row, uint64_t *end)
{
	Dwarf_Frame *f;
	Dwarf_Op mem[3], *ops;
	size_t nops;
	Dwarf_Addr s, e;
	bool signalp;
	int64_t off;

	memset(row, 0, sizeof(*row));
	*end = 0;
	if (dwarf_cfi_addrframe(cfi, pc, &f))
		return;
	dwarf_frame_info(f, &s, &e, &signalp);
	*end = e;
	if (signalp) {
		row->kind = DP_CFI_SIGNAL;
		goto out;
	}
	if (dwarf_frame_register(f, 16, mem, &ops, &nops))
		goto out;
	if (!nops && ops) {
		row->kind = DP_CFI_END;
		goto out;
	}
	if (!cfa_plus(ops, nops, &off))
		goto out;
	row->ra_off = (int16_t)off;
	if (dwarf_frame_register(f, 6, mem, &ops, &nops))
		goto out;
	if (!nops && !ops)
		row->rbp_off = 0;
	else if (cfa_plus(ops, nops, &off))
		row->rbp_off = (int16_t)off;
	else
		row->rbp_off = DP_CFI_RBP_LOST;
	if (dwarf_frame_cfa(f, &ops, &nops) || !nops)
		goto out;
	if (nops == 1 && (ops[0].atom == DW_OP_breg7 || ops[0].atom == DW_OP_breg6)) {
		row->kind = ops[0].atom == DW_OP_breg7 ? DP_CFI_RSP : DP_CFI_RBP;
		row->cfa_off = (int32_t)ops[0].number;
	} else if (nops == 1 && ops[0].atom == DW_OP_bregx && (ops[0].number == 6 || ops[0].number == 7)) {
		row->kind = ops[0].number == 7 ? DP_CFI_RSP : DP_CFI_RBP;
		row->cfa_off = (int32_t)ops[0].number2;
	} else if (plt_expr(ops, nops, &row->cfa_off, &row->arg)) {
		row->kind = DP_CFI_PLT;
	}
out:
	if (row->kind == DP_CFI_STOP || row->kind == DP_CFI_SIGNAL || row->kind == DP_CFI_END)
		row->cfa_off = row->ra_off = row->rbp_off = row->arg = 0;
	free(f);
}

static bool same(const struct dp_cfi_row *a, const struct dp_cfi_row *b)
{
	return a->kind == b->kind && a->cfa_off == b->cfa_off && a->ra_off == b->ra_off &&
	       a->rbp_off == b->rbp_off && a->arg == b->arg;
}

static void check_file(const char *path)
{
	unsigned long long addresses = 0, stops = 0, changes = 0, bad = 0, kinds[6] = { 0 };
	size_t counted = 0;
	struct dp_err err = DP_ERR_INIT;
	struct dp_cfi_table t;
	Elf_Data *data;
	uint64_t addr;
	Dwarf_CFI *cfi;
	Elf *e;
	int fd = open(path, O_RDONLY);

	tests++;
	elf_version(EV_CURRENT);
	if (fd < 0 || !(e = elf_begin(fd, ELF_C_READ, NULL)) || !dp_eh_frame_find(e, &data, &addr) ||
	    !(cfi = dwarf_getcfi_elf(e))) {
		printf("not ok %d - %s: no .eh_frame to read\n", tests, path);
		return;
	}
	if (dp_cfi_compile(data->d_buf, data->d_size, addr, 0, &t, &err)) {
		printf("not ok %d - %s: %s\n", tests, path, err.msg);
		return;
	}
	for (size_t i = 0; i + 1 < t.n; i++) {
		uint64_t pc = t.rows[i].pc, end = t.rows[i + 1].pc;

		while (pc < end) {
			struct dp_cfi_row want, got = t.rows[i];
			uint64_t lend;

			oracle(cfi, pc, &want, &lend);
			if (dp_cfi_lookup(&t, pc) != &t.rows[i] && bad++ < 10)
				printf("# %s 0x%llx: the lookup finds row %td, not %zu\n", path,
				       (unsigned long long)pc, dp_cfi_lookup(&t, pc) - t.rows, i);
			got.pc = 0;
			if (got.kind == DP_CFI_SIGNAL || got.kind == DP_CFI_END || got.kind == DP_CFI_STOP)
				got.cfa_off = got.ra_off = got.rbp_off = got.arg = 0;
			if (!same(&want, &got) && bad++ < 10)
				printf("# %s 0x%llx: table kind %u cfa %d ra %d rbp %d arg %u, "
				       "libdw kind %u cfa %d ra %d rbp %d arg %u\n", path,
				       (unsigned long long)pc, got.kind, got.cfa_off, got.ra_off,
				       got.rbp_off, got.arg, want.kind, want.cfa_off, want.ra_off,
				       want.rbp_off, want.arg);
			if (lend <= pc || lend > end)
				lend = end;
			/* The lookup at the range's last byte too. */
			if (dp_cfi_lookup(&t, lend - 1) != &t.rows[i] && bad++ < 10)
				printf("# %s 0x%llx: the lookup misses row %zu\n", path,
				       (unsigned long long)lend - 1, i);
			addresses += lend - pc;
			stops += got.kind == DP_CFI_STOP ? lend - pc : 0;
			kinds[got.kind]++;
			changes++;
			pc = lend;
		}
	}
	/* The blocks a lookup counts (at most DP_CFI_SCAN rows) and those it
	 * searches: the padding rows must be there for the first. */
	for (size_t b = 0; b < t.nblocks; b++)
		counted += t.blocks[b + 1] + 1 - t.blocks[b] <= DP_CFI_SCAN;
	for (size_t i = t.n; i < t.n + DP_CFI_SCAN - 1; i++)
		if (t.rows[i].pc != UINT32_MAX && bad++ < 10)
			printf("# %s: padding row %zu has pc 0x%x\n", path, i, t.rows[i].pc);
	printf("%s %d - %s: %zu FDEs (%zu left STOP), %zu rows, %llu addresses in %llu "
	       "ranges, %llu STOP, %llu differ from libdw (ranges by kind: rsp %llu rbp %llu "
	       "plt %llu signal %llu end %llu), %zu blocks, %.2f%% counted\n",
	       bad ? "not ok" : "ok", tests, path,
	       t.fdes, t.fdes_failed, t.n, addresses, changes, stops, bad,
	       kinds[DP_CFI_RSP], kinds[DP_CFI_RBP], kinds[DP_CFI_PLT], kinds[DP_CFI_SIGNAL],
	       kinds[DP_CFI_END], t.nblocks, t.nblocks ? 100.0 * counted / t.nblocks : 0);
	dp_cfi_table_release(&t);
	dwarf_cfi_end(cfi);
	elf_end(e);
	close(fd);
}

/*
 * Damaged .eh_frame bytes (cut anywhere, bytes flipped): the compiler must
 * stay within them and still give sorted rows, or refuse.
 */
static void check_damage(const char *path)
{
	struct dp_err err = DP_ERR_INIT;
	unsigned refused = 0, built = 0, unsorted = 0;
	struct dp_cfi_table t;
	Elf_Data *data;
	uint64_t addr;
	Elf *e;
	int fd = open(path, O_RDONLY);

	tests++;
	if (fd < 0 || !(e = elf_begin(fd, ELF_C_READ, NULL)) || !dp_eh_frame_find(e, &data, &addr)) {
		printf("not ok %d - %s: no .eh_frame to damage\n", tests, path);
		return;
	}
	srand(14);
	for (unsigned round = 0; round < 300; round++) {
		size_t len = round < 100 ? (size_t)rand() % data->d_size : data->d_size;
		/* An exact-size copy: a read past it is a fault under ASan/valgrind. */
		uint8_t *copy = malloc(len ? len : 1);

		memcpy(copy, data->d_buf, len);
		for (unsigned k = 0; round >= 100 && k < 1 + round % 8; k++)
			copy[(size_t)rand() % len] ^= (uint8_t)(1u << (rand() % 8));
		if (dp_cfi_compile(copy, len, addr, 0, &t, &err)) {
			refused++;
		} else {
			built++;
			for (size_t i = 1; i < t.n; i++)
				unsorted += t.rows[i - 1].pc >= t.rows[i].pc;
			dp_cfi_table_release(&t);
		}
		free(copy);
	}
	printf("%s %d - %s damaged 300 ways: %u tables built, %u refused, %u rows out of order\n",
	       unsorted ? "not ok" : "ok", tests, path, built, refused, unsorted);
	elf_end(e);
	close(fd);
}

/* The test's own loaded libc, found through the loader. */
static const char *libc_path(void)
{
	static char path[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096 + 128];

	while (f && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		if (p && strstr(p, "/libc.so.6")) {
			p[strcspn(p, "\n")] = '\0';
			snprintf(path, sizeof(path), "%s", p);
			break;
		}
	}
	if (f)
		fclose(f);
	return path[0] ? path : "/lib/x86_64-linux-gnu/libc.so.6";
}

int main(int argc, char **argv)
{
	printf("1..%d\n", argc + 2);
	check_file(libc_path());
	check_damage(libc_path());
	check_file("/proc/self/exe");
	for (int i = 1; i < argc; i++)
		check_file(argv[i]);
	return 0;
}
