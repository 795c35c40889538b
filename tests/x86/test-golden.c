/*
 * Golden decoder cases: reads tests/x86/golden.txt (its header describes the
 * format), decodes each case with dp_insn_decode() and checks every key the
 * case states.  A valid case is also checked for its truncations (each must
 * ask for more bytes) and for trailing junk (which must not change it).
 *
 * Every buffer handed to the decoder ends right before a PROT_NONE page, so
 * a read past `len` faults; the fault is caught and reported as a failure.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "x86/insn.h"
#include "tap.h"
#include "guard.h"

#define MAX_BYTES 48
#define MAX_CHECKS 48
#define JUNK_LEN 16
#define DIAG_LEN 4096

/* ---- names --------------------------------------------------------------- */

struct name {
	const char *name;
	int value;
};

static const struct name enc_names[] = {
	{ "legacy", DP_ENC_LEGACY }, { "3dnow", DP_ENC_3DNOW }, { "vex", DP_ENC_VEX },
	{ "evex", DP_ENC_EVEX }, { "xop", DP_ENC_XOP }, { NULL, 0 },
};

static const struct name map_names[] = {
	{ "1byte", DP_MAP_1BYTE }, { "0f", DP_MAP_0F }, { "0f38", DP_MAP_0F38 },
	{ "0f3a", DP_MAP_0F3A }, { "evex5", DP_MAP_EVEX5 }, { "evex6", DP_MAP_EVEX6 },
	{ "xop8", DP_MAP_XOP8 }, { "xop9", DP_MAP_XOP9 }, { "xopa", DP_MAP_XOPA },
	{ NULL, 0 },
};

static const struct name flow_names[] = {
	{ "none", DP_FLOW_NONE }, { "jmp", DP_FLOW_JMP }, { "jcc", DP_FLOW_JCC },
	{ "call", DP_FLOW_CALL }, { "ret", DP_FLOW_RET }, { "loop", DP_FLOW_LOOP },
	{ "xbegin", DP_FLOW_XBEGIN }, { "jmp_ind", DP_FLOW_JMP_IND },
	{ "call_ind", DP_FLOW_CALL_IND }, { "far", DP_FLOW_FAR },
	{ "syscall", DP_FLOW_SYSCALL }, { "int", DP_FLOW_INT }, { "ud", DP_FLOW_UD },
	{ "trap", DP_FLOW_TRAP }, { NULL, 0 },
};

static const struct name attr_names[] = {
	{ "riprel", DP_ATTR_RIPREL }, { "rel", DP_ATTR_REL },
	{ "ambiguous", DP_ATTR_VENDOR_AMBIGUOUS }, { "vsib", DP_ATTR_VSIB },
	{ "priv", DP_ATTR_PRIVILEGED }, { "mem", DP_ATTR_MEM },
	{ "moffs", DP_ATTR_MOFFS }, { "lockok", DP_ATTR_LOCK_OK },
	{ "stack", DP_ATTR_STACK }, { NULL, 0 },
};

static const struct name pfx_names[] = {
	{ "lock", DP_PFX_LOCK }, { "repne", DP_PFX_REPNE }, { "rep", DP_PFX_REP },
	{ "opsize", DP_PFX_OPSIZE }, { "adsize", DP_PFX_ADSIZE }, { "seg", DP_PFX_SEG },
	{ NULL, 0 },
};

static const char *const reg_names[16] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};

static const struct name *name_find(const struct name *t, const char *s, size_t n)
{
	for (; t->name; t++)
		if (strlen(t->name) == n && !strncmp(t->name, s, n))
			return t;
	return NULL;
}

static const char *name_of(const struct name *t, int value)
{
	for (; t->name; t++)
		if (t->value == value)
			return t->name;
	return "?";
}

static int reg_find(const char *s, size_t n)
{
	for (int i = 0; i < 16; i++)
		if (strlen(reg_names[i]) == n && !strncmp(reg_names[i], s, n))
			return i;
	return -1;
}

/* Formats a bitmask with a name per bit ("rax,rdx", or "-" when empty). */
static const char *mask_str(uint32_t mask, const struct name *t, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int bit = 0; bit < 16; bit++) {
		const char *n;

		if (!(mask & (1u << bit)))
			continue;
		n = t ? name_of(t, 1 << bit) : reg_names[bit];
		used += snprintf(buf + used, size > used ? size - used : 0, "%s%s",
				 used ? "," : "", n);
	}
	if (!used)
		snprintf(buf, size, "-");
	return buf;
}

/* ---- one parsed case ----------------------------------------------------- */

/* What a key checks in struct dp_insn. */
enum key_id {
	K_FIELD,	/* a byte field equals the value */
	K_FIELD64,	/* an int64_t field equals the value */
	K_PRESENT,	/* a flag or size field is not zero */
	K_ABSENT,	/* a flag or size field is zero */
	K_AT,		/* a flag is set and the offset field equals the value */
	K_RANGE,	/* the offset and size fields equal the values */
	K_PFX,		/* the prefix set equals the value */
	K_REL,		/* the rel attribute, and rel equals the value */
	K_ATTR_SET,
	K_ATTR_CLEAR,
	K_REGS_IN,	/* a register mask includes the registers */
	K_REGS_OUT,	/* a register mask excludes the registers */
	K_MNEM,
};

/* How the text after `name=` (or `name@`) is read. */
enum val_kind {
	V_NONE,		/* bare word */
	V_INT,		/* number, decimal or 0x hex, optional minus */
	V_AT,		/* @offset */
	V_RANGE,	/* @offset:size */
	V_ENUM,		/* a name from `names` */
	V_REG,		/* register name, number, or none */
	V_REGS,		/* comma-separated register names */
	V_PFX,		/* comma-separated prefix names, or none */
	V_STR,		/* free word */
};

struct key {
	const char *name;
	enum key_id id;
	enum val_kind kind;
	const struct name *names;
	size_t off, off2;		/* the field(s) checked */
	const char *field, *field2;	/* their names, for messages */
};

#define F(f) offsetof(struct dp_insn, f), 0, #f, NULL
#define F2(f, g) offsetof(struct dp_insn, f), offsetof(struct dp_insn, g), #f, #g

static const struct key keys[] = {
	{ "len", K_FIELD, V_INT, NULL, F(len) },
	{ "enc", K_FIELD, V_ENUM, enc_names, F(enc) },
	{ "map", K_FIELD, V_ENUM, map_names, F(map) },
	{ "opc", K_FIELD, V_INT, NULL, F(opcode) },
	{ "opc", K_FIELD, V_AT, NULL, F(opcode_off) },
	{ "pfx", K_PFX, V_PFX, NULL, F(prefixes) },
	{ "npfx", K_FIELD, V_INT, NULL, F(nprefixes) },
	{ "seg", K_FIELD, V_INT, NULL, F(seg) },
	{ "rex", K_FIELD, V_INT, NULL, F(rex) },
	{ "mand", K_FIELD, V_INT, NULL, F(mandatory) },
	{ "vex", K_FIELD, V_INT, NULL, F(vex_size) },
	{ "w", K_FIELD, V_INT, NULL, F(w) },
	{ "l", K_FIELD, V_INT, NULL, F(l) },
	{ "vvvv", K_FIELD, V_INT, NULL, F(vvvv) },
	{ "aaa", K_FIELD, V_INT, NULL, F(aaa) },
	{ "z", K_FIELD, V_INT, NULL, F(evex_z) },
	{ "b", K_FIELD, V_INT, NULL, F(evex_b) },
	{ "modrm", K_PRESENT, V_NONE, NULL, F(has_modrm) },
	{ "modrm", K_AT, V_AT, NULL, F2(has_modrm, modrm_off) },
	{ "nomodrm", K_ABSENT, V_NONE, NULL, F(has_modrm) },
	{ "mod", K_FIELD, V_INT, NULL, F(mod) },
	{ "reg", K_FIELD, V_REG, NULL, F(reg) },
	{ "rm", K_FIELD, V_REG, NULL, F(rm) },
	{ "sib", K_PRESENT, V_NONE, NULL, F(has_sib) },
	{ "nosib", K_ABSENT, V_NONE, NULL, F(has_sib) },
	{ "index", K_FIELD, V_REG, NULL, F(index) },
	{ "base", K_FIELD, V_REG, NULL, F(base) },
	{ "disp", K_RANGE, V_RANGE, NULL, F2(disp_off, disp_size) },
	{ "nodisp", K_ABSENT, V_NONE, NULL, F(disp_size) },
	{ "disp", K_FIELD64, V_INT, NULL, F(disp) },
	{ "imm", K_RANGE, V_RANGE, NULL, F2(imm_off, imm_size) },
	{ "noimm", K_ABSENT, V_NONE, NULL, F(imm_size) },
	{ "imm", K_FIELD64, V_INT, NULL, F(imm) },
	{ "imm2", K_RANGE, V_RANGE, NULL, F2(imm2_off, imm2_size) },
	{ "noimm2", K_ABSENT, V_NONE, NULL, F(imm2_size) },
	{ "osz", K_FIELD, V_INT, NULL, F(opsize) },
	{ "asz", K_FIELD, V_INT, NULL, F(adsize) },
	{ "flow", K_FIELD, V_ENUM, flow_names, F(flow) },
	{ "rel", K_REL, V_INT, NULL, F(rel) },
	{ "rd", K_REGS_IN, V_REGS, NULL, F(regs_read) },
	{ "wr", K_REGS_IN, V_REGS, NULL, F(regs_written) },
	{ "nord", K_REGS_OUT, V_REGS, NULL, F(regs_read) },
	{ "nowr", K_REGS_OUT, V_REGS, NULL, F(regs_written) },
	{ "mnem", K_MNEM, V_STR, NULL, F(mnemonic) },
};

struct check {
	const struct key *key;
	int64_t a, b;		/* value, or offset and size */
	char str[32];
};

struct gcase {
	unsigned line;
	uint8_t bytes[MAX_BYTES];
	size_t nbytes;
	int error;		/* 0, ENODATA or EINVAL */
	int64_t len;
	struct check checks[MAX_CHECKS];
	size_t nchecks;
	char asm_text[128];
};

/* ---- parsing ------------------------------------------------------------- */

static bool parse_int(const char *s, size_t n, int64_t *out)
{
	char buf[40], *end;
	bool neg = false;
	uint64_t v;

	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	s = buf;
	if (*s == '-') {
		neg = true;
		s++;
	}
	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return false;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

/* A register: name (rax..r15), number (0..31, for vector index) or none. */
static bool parse_reg(const char *s, size_t n, int64_t *out)
{
	int r;

	if (n == 4 && !strncmp(s, "none", 4)) {
		*out = DP_REG_NONE;
		return true;
	}
	r = reg_find(s, n);
	if (r >= 0) {
		*out = r;
		return true;
	}
	return parse_int(s, n, out) && *out >= 0 && *out < 32;
}

/* A comma-separated list of names from `t` (or registers when t is NULL). */
static bool parse_list(const char *s, size_t n, const struct name *t, int64_t *out)
{
	const char *end = s + n;

	*out = 0;
	if (t && n == 4 && !strncmp(s, "none", 4))
		return true;
	while (s < end) {
		const char *comma = memchr(s, ',', end - s);
		size_t len = (comma ? comma : end) - s;

		if (t) {
			const struct name *nm = name_find(t, s, len);

			if (!nm)
				return false;
			*out |= nm->value;
		} else {
			int r = reg_find(s, len);

			if (r < 0)
				return false;
			*out |= 1 << r;
		}
		s += len + (comma ? 1 : 0);
		if (comma && s == end)
			return false;
	}
	return *out != 0;
}

/* Parses one expectation word; returns an error message or NULL. */
static const char *parse_word(struct gcase *c, const char *w, size_t n)
{
	const struct name *attr;
	struct check *chk;
	const char *sep;
	size_t name_len;
	char sepc;

	if ((n == 6 && !strncmp(w, "EINVAL", 6)) || (n == 7 && !strncmp(w, "ENODATA", 7))) {
		if (c->error)
			return "more than one error";
		c->error = n == 6 ? EINVAL : ENODATA;
		return NULL;
	}
	if (c->nchecks == MAX_CHECKS)
		return "too many keys";
	chk = &c->checks[c->nchecks];

	attr = name_find(attr_names, w[0] == '-' ? w + 1 : w, w[0] == '-' ? n - 1 : n);
	if (attr) {
		static const struct key set = { "attr", K_ATTR_SET, V_NONE, NULL, F(attr) };
		static const struct key clear = { "attr", K_ATTR_CLEAR, V_NONE, NULL, F(attr) };

		chk->key = w[0] == '-' ? &clear : &set;
		chk->a = attr->value;
		snprintf(chk->str, sizeof(chk->str), "%s", attr->name);
		c->nchecks++;
		return NULL;
	}

	sep = w;
	while (sep < w + n && *sep != '=' && *sep != '@')
		sep++;
	name_len = sep - w;
	sepc = sep < w + n ? *sep : '\0';

	for (const struct key *k = keys; k < keys + sizeof(keys) / sizeof(keys[0]); k++) {
		const char *v = sep + 1;
		size_t vn = sepc ? n - name_len - 1 : 0;
		const char *colon;
		bool ok = false;

		if (strlen(k->name) != name_len || strncmp(k->name, w, name_len))
			continue;
		if ((k->kind == V_NONE) != (sepc == '\0'))
			continue;
		if ((k->kind == V_AT || k->kind == V_RANGE) != (sepc == '@'))
			continue;

		chk->key = k;
		switch (k->kind) {
		case V_NONE:
			ok = true;
			break;
		case V_INT:
			ok = parse_int(v, vn, &chk->a);
			break;
		case V_AT:
			ok = parse_int(v, vn, &chk->a) && chk->a >= 0;
			break;
		case V_RANGE:
			colon = memchr(v, ':', vn);
			ok = colon && parse_int(v, colon - v, &chk->a) &&
			     parse_int(colon + 1, v + vn - colon - 1, &chk->b) &&
			     chk->a >= 0 && chk->b > 0;
			break;
		case V_ENUM: {
			const struct name *nm = name_find(k->names, v, vn);

			if (nm) {
				chk->a = nm->value;
				ok = true;
			}
			break;
		}
		case V_REG:
			ok = parse_reg(v, vn, &chk->a);
			break;
		case V_REGS:
			ok = parse_list(v, vn, NULL, &chk->a);
			break;
		case V_PFX:
			ok = parse_list(v, vn, pfx_names, &chk->a);
			break;
		case V_STR:
			ok = vn > 0 && vn < sizeof(chk->str);
			if (ok)
				snprintf(chk->str, sizeof(chk->str), "%.*s", (int)vn, v);
			break;
		}
		if (!ok)
			return "bad value";
		if (!strcmp(k->name, "len")) {
			if (chk->a < 1 || chk->a > DP_INSN_MAX_LEN)
				return "len out of 1..15";
			c->len = chk->a;
		}
		c->nchecks++;
		return NULL;
	}
	return "unknown key";
}

/* Hex bytes: "XX" tokens, or "XX*N" for N copies. */
static const char *parse_bytes(struct gcase *c, const char *s, const char *end)
{
	while (s < end) {
		const char *t;
		int64_t count = 1;
		unsigned v;

		while (s < end && isspace((unsigned char)*s))
			s++;
		if (s == end)
			break;
		t = s;
		while (t < end && !isspace((unsigned char)*t))
			t++;
		if (t - s < 2 || !isxdigit((unsigned char)s[0]) ||
		    !isxdigit((unsigned char)s[1]))
			return "bad hex byte";
		if (t - s > 2 && (s[2] != '*' || !parse_int(s + 3, t - s - 3, &count) ||
				  count < 1 || count > MAX_BYTES))
			return "bad hex byte";
		sscanf(s, "%2x", &v);
		while (count--) {
			if (c->nbytes == MAX_BYTES)
				return "too many bytes";
			c->bytes[c->nbytes++] = v;
		}
		s = t;
	}
	return c->nbytes ? NULL : "no bytes";
}

/*
 * Parses "HEX BYTES | KEYS  # assembly".  Returns NULL for a case, "" for a
 * blank or comment line, or an error message.
 */
static const char *parse_line(struct gcase *c, char *line)
{
	char *hash, *bar, *s, *end;
	const char *err;

	hash = strchr(line, '#');
	if (hash) {
		char *a = hash + 1;
		size_t n;

		while (isspace((unsigned char)*a))
			a++;
		n = strcspn(a, "\r\n");
		snprintf(c->asm_text, sizeof(c->asm_text), "%.*s", (int)n, a);
		*hash = '\0';
	}
	for (s = line; isspace((unsigned char)*s); s++)
		;
	if (!*s)
		return "";
	bar = strchr(s, '|');
	if (!bar)
		return "missing '|' between bytes and keys";
	err = parse_bytes(c, s, bar);
	if (err)
		return err;

	s = bar + 1;
	end = s + strlen(s);
	while (s < end) {
		char *t;

		while (s < end && isspace((unsigned char)*s))
			s++;
		if (s == end)
			break;
		t = s;
		while (t < end && !isspace((unsigned char)*t))
			t++;
		err = parse_word(c, s, t - s);
		if (err) {
			static char msg[96];

			snprintf(msg, sizeof(msg), "%s: '%.*s'", err, (int)(t - s), s);
			return msg;
		}
		s = t;
	}
	if (c->error && c->nchecks)
		return "an error case takes no other key";
	if (!c->error && !c->len)
		return "len= is required";
	if (!c->error && (size_t)c->len > c->nbytes)
		return "len is larger than the bytes given";
	return NULL;
}

/* ---- checking ------------------------------------------------------------ */

struct diag {
	char buf[DIAG_LEN];
	size_t used;
	unsigned bad;
};

__attribute__((format(printf, 2, 3)))
static void diag_add(struct diag *d, const char *fmt, ...)
{
	va_list ap;

	d->bad++;
	if (d->used >= sizeof(d->buf) - 1)
		return;
	if (d->used)
		d->buf[d->used++] = '\n';
	va_start(ap, fmt);
	d->used += vsnprintf(d->buf + d->used, sizeof(d->buf) - d->used, fmt, ap);
	va_end(ap);
	if (d->used >= sizeof(d->buf))
		d->used = sizeof(d->buf) - 1;
}

static void diag_flush(const struct diag *d)
{
	const char *s = d->buf;

	while (*s) {
		size_t n = strcspn(s, "\n");

		tap_diag("  %.*s", (int)n, s);
		s += n + (s[n] ? 1 : 0);
	}
}

static void check_int(struct diag *d, const char *what, int64_t want, int64_t got)
{
	if (want != got)
		diag_add(d, "%s: expected %" PRId64 " (0x%" PRIx64 "), got %" PRId64 " (0x%" PRIx64 ")",
			 what, want, (uint64_t)want, got, (uint64_t)got);
}

/* The mnemonic, or a placeholder when it is NULL or was never written. */
static const char *mnem_of(const struct dp_insn *in)
{
	const char *poison;

	memset(&poison, GUARD_POISON, sizeof(poison));
	if (!in->mnemonic)
		return "(null)";
	return in->mnemonic == poison ? "(not set)" : in->mnemonic;
}

/* The byte at `off` in the struct; flags are read as bytes too. */
static unsigned field_u8(const struct dp_insn *in, size_t off)
{
	return ((const uint8_t *)in)[off];
}

static void check_one(struct diag *d, const struct check *chk, const struct dp_insn *in)
{
	const struct key *k = chk->key;
	char want[128], got[128];
	uint16_t mask;
	int64_t v;

	switch (k->id) {
	case K_FIELD:
		v = field_u8(in, k->off);
		if (k->names && v != chk->a)
			diag_add(d, "%s: expected %s, got %s (%" PRId64 ")", k->field,
				 name_of(k->names, chk->a), name_of(k->names, v), v);
		else
			check_int(d, k->field, chk->a, v);
		break;
	case K_FIELD64:
		memcpy(&v, (const char *)in + k->off, sizeof(v));
		check_int(d, k->field, chk->a, v);
		break;
	case K_PRESENT:
		if (!field_u8(in, k->off))
			diag_add(d, "%s: expected non-zero, got 0", k->field);
		break;
	case K_ABSENT:
		check_int(d, k->field, 0, field_u8(in, k->off));
		break;
	case K_AT:
		if (!field_u8(in, k->off))
			diag_add(d, "%s: expected set (%s %" PRId64 "), got 0", k->field, k->field2,
				 chk->a);
		else
			check_int(d, k->field2, chk->a, field_u8(in, k->off2));
		break;
	case K_RANGE:
		if (field_u8(in, k->off) != chk->a || field_u8(in, k->off2) != chk->b)
			diag_add(d, "%s: expected @%" PRId64 ":%" PRId64 ", got @%u:%u", k->name,
				 chk->a, chk->b, field_u8(in, k->off), field_u8(in, k->off2));
		break;
	case K_PFX:
		if (chk->a != in->prefixes)
			diag_add(d, "prefixes: expected %s, got %s",
				 mask_str(chk->a, pfx_names, want, sizeof(want)),
				 mask_str(in->prefixes, pfx_names, got, sizeof(got)));
		break;
	case K_REL:
		if (!(in->attr & DP_ATTR_REL))
			diag_add(d, "rel: expected the rel attribute with rel=%" PRId64
				 ", got no rel attribute", chk->a);
		else
			check_int(d, "rel", chk->a, in->rel);
		break;
	case K_ATTR_SET:
	case K_ATTR_CLEAR:
		if (!(in->attr & chk->a) != (k->id == K_ATTR_CLEAR))
			diag_add(d, "attr: expected %s %s, got %s (attr=%s)", chk->str,
				 k->id == K_ATTR_SET ? "set" : "clear",
				 k->id == K_ATTR_SET ? "clear" : "set",
				 mask_str(in->attr, attr_names, got, sizeof(got)));
		break;
	case K_REGS_IN:
	case K_REGS_OUT:
		memcpy(&mask, (const char *)in + k->off, sizeof(mask));
		if (k->id == K_REGS_IN ? (mask & chk->a) != chk->a : (mask & chk->a) != 0)
			diag_add(d, "%s: expected to %s %s, got %s", k->field,
				 k->id == K_REGS_IN ? "include" : "exclude",
				 mask_str(chk->a, NULL, want, sizeof(want)),
				 mask_str(mask, NULL, got, sizeof(got)));
		break;
	case K_MNEM:
		if (strcmp(mnem_of(in), chk->str))
			diag_add(d, "mnemonic: expected %s, got %s", chk->str, mnem_of(in));
		break;
	}
}

static const char *rc_str(int rc)
{
	static char buf[24];

	switch (rc) {
	case 0:
		return "0";
	case -ENODATA:
		return "ENODATA";
	case -EINVAL:
		return "EINVAL";
	case -EFAULT:
		return "a read outside the buffer";
	}
	snprintf(buf, sizeof(buf), "%d", rc);
	return buf;
}

/* The fields a trailing-junk decode must reproduce. */
static bool same_decoding(const struct dp_insn *a, const struct dp_insn *b)
{
	return a->len == b->len && a->enc == b->enc && a->map == b->map &&
	       a->opcode == b->opcode && a->opcode_off == b->opcode_off &&
	       a->prefixes == b->prefixes && a->rex == b->rex &&
	       a->has_modrm == b->has_modrm && a->has_sib == b->has_sib &&
	       a->disp_off == b->disp_off && a->disp_size == b->disp_size &&
	       a->imm_off == b->imm_off && a->imm_size == b->imm_size &&
	       a->imm2_off == b->imm2_off && a->imm2_size == b->imm2_size &&
	       a->flow == b->flow && a->attr == b->attr &&
	       (!(a->attr & DP_ATTR_REL) || a->rel == b->rel) &&
	       a->regs_read == b->regs_read && a->regs_written == b->regs_written;
}

static void bytes_str(const uint8_t *b, size_t n, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used + 4 < size; i++)
		used += snprintf(buf + used, size - used, "%s%02x", i ? " " : "", b[i]);
}

static void run_case(const struct gcase *c, const char *label)
{
	static const uint8_t junk[][JUNK_LEN] = {
		{ 0 },
		{ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		  0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
		{ 0x0f, 0x66, 0x67, 0x48, 0xc4, 0x62, 0x8f, 0x0f,
		  0x38, 0xf0, 0x2e, 0xa0, 0xe8, 0x05, 0x84, 0x24 },
	};
	int want_rc = -c->error;
	struct dp_insn in, in2;
	struct diag d = { .used = 0 };
	uint8_t buf[MAX_BYTES + JUNK_LEN];
	int rc, rc0;

	rc = rc0 = decode_guarded(c->bytes, c->nbytes, &in);
	if (rc != want_rc) {
		diag_add(&d, "result: expected %s, got %s", rc_str(want_rc), rc_str(rc));
		if (rc == 0)
			diag_add(&d, "(decoded len=%u mnemonic=%s)", in.len, mnem_of(&in));
	} else if (rc == 0) {
		for (size_t i = 0; i < c->nchecks; i++)
			check_one(&d, &c->checks[i], &in);
	}
	tap_ok(!d.bad, "%s", label);
	diag_flush(&d);

	if (c->error == ENODATA)
		return;

	if (!c->error) {
		char bad[256];
		size_t used = 0;

		memset(&d, 0, sizeof(d));
		bad[0] = '\0';
		for (size_t k = 0; k < (size_t)c->len; k++) {
			int trc = decode_guarded(c->bytes, k, &in2);

			if (trc == -ENODATA)
				continue;
			d.bad++;
			if (used < sizeof(bad) - 32)
				used += snprintf(bad + used, sizeof(bad) - used, "%sk=%zu:%s",
						 used ? " " : "", k, rc_str(trc));
		}
		tap_ok(!d.bad, "%s: every truncation asks for more bytes", label);
		if (d.bad)
			tap_diag("  expected ENODATA for each of the first k=0..%" PRId64
				 " bytes, got %s", c->len - 1, bad);
	}

	memset(&d, 0, sizeof(d));
	for (size_t j = 0; j < sizeof(junk) / sizeof(junk[0]); j++) {
		char hex[3 * JUNK_LEN + 1];

		memcpy(buf, c->bytes, c->nbytes);
		memcpy(buf + c->nbytes, junk[j], JUNK_LEN);
		rc = decode_guarded(buf, c->nbytes + JUNK_LEN, &in2);
		bytes_str(junk[j], JUNK_LEN, hex, sizeof(hex));
		if (rc != want_rc)
			diag_add(&d, "followed by %s: expected %s, got %s", hex,
				 rc_str(want_rc), rc_str(rc));
		else if (rc == 0 && rc0 == 0 && in2.len != in.len)
			diag_add(&d, "followed by %s: len %u became %u", hex, in.len, in2.len);
		else if (rc == 0 && rc0 == 0 && !same_decoding(&in, &in2))
			diag_add(&d, "followed by %s: same len, other fields changed", hex);
	}
	tap_ok(!d.bad, "%s: trailing bytes change nothing", label);
	diag_flush(&d);
}

/* golden.txt: argv[1], else $top_srcdir/tests/x86, else beside this source. */
static FILE *open_golden(int argc, char **argv, char *path, size_t size)
{
	const char *top = getenv("top_srcdir");
	const char *slash;

	if (argc > 1)
		snprintf(path, size, "%s", argv[1]);
	else if (top && *top)
		snprintf(path, size, "%s/tests/x86/golden.txt", top);
	else if ((slash = strrchr(__FILE__, '/')))
		snprintf(path, size, "%.*s/golden.txt", (int)(slash - __FILE__), __FILE__);
	else
		snprintf(path, size, "golden.txt");
	return fopen(path, "r");
}

int main(int argc, char **argv)
{
	char path[4096];
	char *line = NULL;
	size_t cap = 0;
	unsigned lineno = 0, ncases = 0;
	const char *name;
	FILE *f;
	int err;

	err = guard_init();
	if (err) {
		tap_ok(false, "guard page: %s", strerror(-err));
		return tap_done();
	}
	f = open_golden(argc, argv, path, sizeof(path));
	if (!tap_ok(f != NULL, "open %s", path)) {
		tap_diag("  %s", strerror(errno));
		return tap_done();
	}
	name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

	while (getline(&line, &cap, f) > 0) {
		struct gcase c = { .line = ++lineno };
		char label[384], hex[3 * MAX_BYTES + 1];
		const char *perr;

		perr = parse_line(&c, line);
		if (perr && !*perr)
			continue;
		if (perr) {
			tap_ok(false, "%.64s:%u: malformed line", name, lineno);
			tap_diag("  %s", perr);
			continue;
		}
		ncases++;
		bytes_str(c.bytes, c.nbytes, hex, sizeof(hex));
		snprintf(label, sizeof(label), "%.64s:%u: %s%s%s%s", name, lineno, hex,
			 c.asm_text[0] ? " (" : "", c.asm_text, c.asm_text[0] ? ")" : "");
		run_case(&c, label);
	}
	free(line);
	fclose(f);
	tap_ok(ncases > 0, "%u golden cases read from %s", ncases, path);
	return tap_done();
}
