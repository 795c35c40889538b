/*
 * The spec layer (spec/spec.h) on its own: numbers in every base and their
 * errors, locations, event names, context types, and resolution against
 * cli-target, whose foo and bar have known bytes (cli-target.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "patch/analysis.h"
#include "spec/spec.h"
#include "spec/var.h"
#include "tap.h"

static void number(const char *s, int want, uint64_t value, const char *msg)
{
	struct dp_err err = DP_ERR_INIT;
	uint64_t v = 0;
	int ret = dp_spec_number(s, &v, &err);

	if (!want)
		tap_ok(!ret && v == value, "number '%s' = %llu", s, (unsigned long long)value);
	else
		tap_ok(ret == want && strstr(err.msg, msg), "number '%s' refused: %s", s, err.msg);
}

static void location(const char *s, int want, enum dp_loc_kind kind, const char *sym,
		     uint64_t n, const char *msg)
{
	struct dp_err err = DP_ERR_INIT;
	struct dp_location loc;
	int ret = dp_spec_location_parse(s, &loc, &err);

	if (want) {
		tap_ok(ret == want && strstr(err.msg, msg), "location '%s' refused: %s", s, err.msg);
		return;
	}
	if (kind == DP_LOC_ADDR)
		tap_ok(!ret && loc.kind == kind && loc.addr == n, "location '%s' is address %#llx", s,
		       (unsigned long long)n);
	else
		tap_ok(!ret && loc.kind == kind && !strcmp(loc.symbol, sym) && loc.offset == n,
		       "location '%s' is %s + %llu", s, sym, (unsigned long long)n);
}

/* A C++ or Rust name as typed: its symbol, offset, and whether a pattern. */
static void source(const char *s, const char *sym, uint64_t off, bool pattern)
{
	struct dp_err err = DP_ERR_INIT;
	struct dp_location loc;
	int ret = dp_spec_location_parse(s, &loc, &err);

	tap_ok(!ret && loc.kind == DP_LOC_SYMBOL && loc.source && !strcmp(loc.symbol, sym) &&
	       loc.offset == off && loc.pattern == pattern, "C++ name '%s' is '%s' + %llu%s%s", s,
	       sym, (unsigned long long)off, pattern ? ", a pattern" : "", ret ? err.msg : "");
}

/* A source line: FILE and LINE. */
static void line(const char *s, const char *file, uint32_t n)
{
	struct dp_err err = DP_ERR_INIT;
	struct dp_location loc;
	int ret = dp_spec_location_parse(s, &loc, &err);

	tap_ok(!ret && loc.kind == DP_LOC_LINE && !strcmp(loc.symbol, file) && loc.line == n,
	       "location '%s' is line %u of %s%s", s, n, file, ret ? err.msg : "");
}

/* lttng trace's event name of a location. */
static void trace_name(const char *s, const char *want)
{
	struct dp_err err = DP_ERR_INIT;
	char name[DP_SPEC_EVENT_MAX];
	struct dp_location loc;

	dp_spec_location_parse(s, &loc, &err);
	tap_ok(!dp_spec_location_event_name(&loc, name, sizeof(name)) && !strcmp(name, want),
	       "event name of '%s': %s (%s)", s, want, name);
}

static void event(const char *name, const char *suffix, const char *want)
{
	struct dp_err err = DP_ERR_INIT;
	char out[DP_SPEC_EVENT_MAX];
	int ret = dp_spec_event_name(name, suffix, out, sizeof(out), &err);

	if (want[0] == '!')
		tap_ok(ret && strstr(err.msg, want + 1), "event name '%s' refused: %s", name, err.msg);
	else
		tap_ok(!ret && !strcmp(out, want), "event name '%s'%s is %s", name, suffix, want);
}

static void context(const char *type, bool dynamic, const char *msg)
{
	struct dp_err err = DP_ERR_INIT;

	tap_ok(dp_spec_context_is_dynamic(type) == dynamic, "'%s' is %s", type,
	       dynamic ? "dynamic" : "standard");
	if (!dynamic)
		return;
	if (msg)
		tap_ok(dp_spec_context_check(type, &err) == -EINVAL && strstr(err.msg, msg),
		       "'%s' refused: %s", type, err.msg);
	else
		tap_ok(!dp_spec_context_check(type, &err), "'%s' accepted", type);
}

/* var:EXPR: the path parsed into steps (spelled back the same) and the
 * field name the rule gives. */
static void var(const char *spec, const char *field, const char *spelled, const char *type)
{
	struct dp_err err = DP_ERR_INIT;
	struct dp_var_expr e;
	char back[256] = "";
	struct dp_ctx ctx;
	int ret = dp_var_parse(spec, &e, &err);

	if (!ret)
		dp_var_format(&e, back, sizeof(back));
	tap_ok(!ret && !strcmp(e.field, field) && !strcmp(back, spelled),
	       "'%s': field %s, path %s (%s)", spec, ret ? "?" : e.field, back, err.msg);
	if (type)
		tap_ok(!ret && e.typed && (strcmp(type, "string") ? !e.string &&
		       e.type.size == (type[strlen(type) - 1] == '6' ? 2 : 4) : e.string),
		       "'%s': recorded as %s", spec, type);
	tap_ok(!dp_ctx_parse(spec, NULL, NULL, &ctx, &err) && ctx.kind == DP_CTX_VAR &&
	       !strcmp(ctx.name, field), "'%s' parses as a var context named %s", spec, ctx.name);
}

static void resolve(struct dp_object *obj, const char *s, int want, uint64_t off, const char *msg)
{
	struct dp_err err = DP_ERR_INIT;
	const struct dp_function *fn = NULL, *foo = dp_object_function_by_name(obj, "foo");
	struct dp_location loc;
	uint64_t vaddr = 0;
	int ret;

	dp_spec_location_parse(s, &loc, &err);
	ret = dp_spec_location_resolve(obj, "cli-target", &loc, &vaddr, &fn, &err);
	if (want)
		tap_ok(ret == want && strstr(err.msg, msg), "resolve '%s' refused: %s", s, err.msg);
	else
		tap_ok(!ret && foo && vaddr == foo->start + off && fn == foo,
		       "resolve '%s' = foo+%#llx", s, (unsigned long long)off);
}

int main(int argc, char **argv)
{
	struct dp_object *obj;
	char name[DP_SPEC_EVENT_MAX];
	struct dp_location loc;
	struct dp_err err;

	line("sched.c:42", "sched.c", 42);
	line("kernel/sched.c:7", "kernel/sched.c", 7);
	line("/usr/src/a b/x.c:1", "/usr/src/a b/x.c", 1);
	line("Makefile:3", "Makefile", 3);
	location("x.c:0", -EINVAL, DP_LOC_LINE, NULL, 0, "a line number is decimal, from 1");
	location("x.c:99999999999", -EINVAL, DP_LOC_LINE, NULL, 0, "a line number is decimal");
	source("shop::Cart::add", "shop::Cart::add", 0, false);
	trace_name("sched.c:42", "sched_c_42");
	trace_name("kernel/my-file.cc:7", "my_file_cc_7");
	number("0", 0, 0, NULL);
	number("42", 0, 42, NULL);
	number("052", 0, 42, NULL);
	number("0x2a", 0, 42, NULL);
	number("0X2A", 0, 42, NULL);
	number("0xffffffffffffffff", 0, UINT64_MAX, NULL);
	number("18446744073709551615", 0, UINT64_MAX, NULL);
	number("18446744073709551616", -ERANGE, 0, "does not fit in 64 bits");
	number("0x10000000000000000", -ERANGE, 0, "does not fit in 64 bits");
	number("", -EINVAL, 0, "missing");
	number("0x", -EINVAL, 0, "hex digits must follow 0x");
	number("0x1g", -EINVAL, 0, "'g' is not a hex digit");
	number("089", -EINVAL, 0, "a leading 0 makes it octal");
	number("12a", -EINVAL, 0, "'a' is not a decimal digit (hex numbers start with 0x)");
	number("-1", -EINVAL, 0, "no sign");

	location("foo", 0, DP_LOC_SYMBOL, "foo", 0, NULL);
	location("foo+0x6", 0, DP_LOC_SYMBOL, "foo", 6, NULL);
	location("foo+010", 0, DP_LOC_SYMBOL, "foo", 8, NULL);
	location("memcpy@@GLIBC_2.14+4", 0, DP_LOC_SYMBOL, "memcpy@@GLIBC_2.14", 4, NULL);
	location("foo.cold", 0, DP_LOC_SYMBOL, "foo.cold", 0, NULL);
	location("0xdeadbeef", 0, DP_LOC_ADDR, NULL, 0xdeadbeef, NULL);
	location("4198710", 0, DP_LOC_ADDR, NULL, 4198710, NULL);
	location("", -EINVAL, 0, NULL, 0, "empty location");
	location("foo+", -EINVAL, 0, NULL, 0, "a number is missing");
	location("foo-4", -EINVAL, 0, NULL, 0, "offsets go forward");
	location("+4", -EINVAL, 0, NULL, 0, "a symbol is missing");
	location("foo+1+2", -EINVAL, 0, NULL, 0, "one offset at most");
	location("0x10+4", -EINVAL, 0, NULL, 0, "an address takes no offset");
	location("fo o", -EINVAL, 0, NULL, 0, "cannot be part of a symbol");
	location("fo*", 0, DP_LOC_SYMBOL, "fo*", 0, NULL);
	location("[bf]a?", 0, DP_LOC_SYMBOL, "[bf]a?", 0, NULL);
	location("[!a-e]oo", 0, DP_LOC_SYMBOL, "[!a-e]oo", 0, NULL);
	location("fo*+4", -EINVAL, 0, NULL, 0, "a pattern names whole functions and takes no offset");
	location("f o*", -EINVAL, 0, NULL, 0, "' ' cannot be part of a pattern");
	dp_spec_location_parse("f*", &loc, &err);
	tap_ok(loc.pattern, "'f*' is a pattern");
	dp_spec_location_parse("foo", &loc, &err);
	tap_ok(!loc.pattern, "'foo' is not");
	location("foo+0x1z", -EINVAL, 0, NULL, 0, "'z' is not a hex digit");

	/* C++ and Rust names as their authors wrote them. */
	source("shop::Cart::add", "shop::Cart::add", 0, false);
	source("shop::Cart::add(int)+0x4", "shop::Cart::add(int)", 4, false);
	source("shop::Cart::operator+=", "shop::Cart::operator+=", 0, false);
	source("shop::Cart::operator+=+8", "shop::Cart::operator+=", 8, false);
	source("shop::Cart::operator++", "shop::Cart::operator++", 0, false);
	source("shop::Cart::~Cart", "shop::Cart::~Cart", 0, false);
	source("std::vector<int, std::allocator<int> >::push_back(int const&)",
	       "std::vector<int, std::allocator<int> >::push_back(int const&)", 0, false);
	source("main::{lambda(int)#1}::operator()(int) const",
	       "main::{lambda(int)#1}::operator()(int) const", 0, false);
	source("shop::f(char const*, int*)", "shop::f(char const*, int*)", 0, false);
	source("shop::Cart::operator*", "shop::Cart::operator*", 0, false);
	source("shop::Cart::operator[](int)", "shop::Cart::operator[](int)", 0, false);
	source("shop::Cart::operator->*", "shop::Cart::operator->*", 0, false);
	source("mycrate::foo", "mycrate::foo", 0, false);
	source("shop::*", "shop::*", 0, true);
	source("*::add*", "*::add*", 0, true);
	source("shop::Cart::add(*)", "shop::Cart::add(*)", 0, true);
	source("std::__cxx11::basic_string*", "std::__cxx11::basic_string*", 0, true);
	location("shop::*+4", -EINVAL, 0, NULL, 0, "a pattern names whole functions");
	location("shop::f(int)+0xz", -EINVAL, 0, NULL, 0, "'z' is not a hex digit");
	location("shop::f\x01", -EINVAL, 0, NULL, 0, "no control characters");
	location("shop:f", -EINVAL, 0, NULL, 0, "C++ and Rust names as NAMESPACE::NAME");
	tap_ok(!dp_spec_userspace_probe_parse("elf:/usr/bin/app:shop::Cart::add(int)+4", name,
					      sizeof(name), &loc, &err) &&
	       !strcmp(name, "/usr/bin/app") && !strcmp(loc.symbol, "shop::Cart::add(int)") &&
	       loc.offset == 4, "elf:/usr/bin/app:shop::Cart::add(int)+4: the first two colons "
	       "separate");
	trace_name("shop::Cart::add", "shop_Cart_add");
	trace_name("shop::Cart::add(int)", "shop_Cart_add_int");
	trace_name("shop::Cart::add(double)", "shop_Cart_add_double");
	trace_name("shop::Cart::add(int)+0x4", "shop_Cart_add_int_4");
	trace_name("shop::size() const", "shop_size_void_const");
	trace_name("shop::Cart::operator+=", "shop_Cart_operator_plus_eq");
	trace_name("shop::Cart::operator()(int)", "shop_Cart_operator_call_int");
	trace_name("shop::Cart::~Cart", "shop_Cart_dtor_Cart");
	trace_name("shop::biggest<int>(int, int)", "shop_biggest_int_int_int");
	trace_name("shop::*", "shop");
	trace_name("*::add*", "add");
	{
		char a[DP_SPEC_EVENT_MAX], b[DP_SPEC_EVENT_MAX], full[DP_SPEC_EVENT_MAX];
		const char *long1 = "std::vector<std::basic_string<char, std::char_traits<char>, "
				    "std::allocator<char> >, std::allocator<std::basic_string<char, "
				    "std::char_traits<char>, std::allocator<char> > > >::push_back("
				    "std::basic_string<char> const&)";
		const char *long2 = "std::vector<std::basic_string<char, std::char_traits<char>, "
				    "std::allocator<char> >, std::allocator<std::basic_string<char, "
				    "std::char_traits<char>, std::allocator<char> > > >::push_back("
				    "std::basic_string<char>&&)";
		bool ok;

		dp_spec_location_parse(long1, &loc, &err);
		ok = !dp_spec_location_event_name(&loc, a, sizeof(a));
		dp_spec_location_parse(long2, &loc, &err);
		ok = ok && !dp_spec_location_event_name(&loc, b, sizeof(b));
		ok = ok && strcmp(a, b) && !strncmp(a, "std_vector_std_basic_string", 27) &&
		     !dp_spec_event_name(a, "_return", full, sizeof(full), &err);
		tap_ok(ok, "long C++ names: cut, kept distinct by a hash, valid with _return "
		       "(%s, %s)", a, b);
	}

	tap_ok(!dp_spec_userspace_probe_parse("elf:/usr/bin/app:foo+4", name, sizeof(name), &loc,
					      &err) && !strcmp(name, "/usr/bin/app") &&
	       !strcmp(loc.symbol, "foo") && loc.offset == 4, "elf:/usr/bin/app:foo+4");
	tap_ok(dp_spec_userspace_probe_parse("sdt:/usr/bin/app:p:n", name, sizeof(name), &loc,
					     &err) == -ENOTSUP, "sdt: refused: %s", err.msg);
	tap_ok(dp_spec_userspace_probe_parse("elf:/usr/bin/app", name, sizeof(name), &loc,
					     &err) == -EINVAL, "elf:PATH alone refused: %s", err.msg);

	event("aname", "", "dynprobe:aname");
	event("app:stuff6", "", "app:stuff6");
	event("zdef", "_entry", "dynprobe:zdef_entry");
	event("app:main", "_return", "app:main_return");
	event("", "", "!empty");
	event("a:b:c", "", "!one ':' at most");
	event(":x", "", "!provider name is empty");
	event("1x", "", "!C identifier");
	event("ev*", "", "!no wildcard");
	event("a,b", "", "!not a list");
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	event(name, "", "!too long");

	dp_spec_location_parse("foo+0x6", &loc, &err);
	tap_ok(!dp_spec_location_event_name(&loc, name, sizeof(name)) && !strcmp(name, "foo_6"),
	       "trace's event name of foo+0x6: foo_6");
	dp_spec_location_parse("0x401136", &loc, &err);
	tap_ok(!dp_spec_location_event_name(&loc, name, sizeof(name)) &&
	       !strcmp(name, "addr_401136"), "trace's event name of 0x401136: addr_401136");
	dp_spec_location_parse("dp_fn_1???", &loc, &err);
	tap_ok(!dp_spec_location_event_name(&loc, name, sizeof(name)) && !strcmp(name, "dp_fn_1"),
	       "a pattern's event name keeps its name characters: %s", name);
	dp_spec_location_parse("*", &loc, &err);
	tap_ok(!dp_spec_location_event_name(&loc, name, sizeof(name)) &&
	       !strcmp(name, "functions"), "'*' gives %s", name);
	dp_spec_location_parse("foo.cold", &loc, &err);
	tap_ok(!dp_spec_location_event_name(&loc, name, sizeof(name)) && !strcmp(name, "foo_cold"),
	       "trace's event name of foo.cold: foo_cold");

	context("regs", true, NULL);
	context("reg:rax", true, NULL);
	context("int:hits:0x601040", true, NULL);
	context("hex32:flags:[rbp-0x14]", true, NULL);
	context("string:name:buf_name", true, NULL);
	context("string:name:*rdi:128", true, NULL);
	context("backtrace", true, NULL);
	context("backtrace:8:cfi", true, NULL);
	context("backtrace:cfi:8", true, NULL);
	context("long:n:buf_name+8", true, NULL);
	context("vpid", false, NULL);
	context("perf:cpu:cache-misses", false, NULL);
	context("$app.myprovider:mytype", false, NULL);
	context("regs:x", true, "takes no argument");
	context("reg", true, "expected reg:NAME");
	context("int:hits", true, "the address is missing");
	context("uint64:2x:0x10", true, "C identifier");
	context("int:hits:0x10:4", true, "only string takes a maximum length");
	context("string:s:buf:5000", true, "1 to 4096");
	context("backtrace:0", true, "1 to 128");
	context("backtrace:fp:cfi", true, "one walker at most");
	context("backtrace:8:8", true, "expected backtrace");
	context("var:len", true, NULL);
	context("args", true, NULL);
	context("var", true, "expected var:EXPR");
	context("var:", true, "expected var:EXPR");
	context("var:2x", true, "expected a name");
	context("var:req->", true, "expected a name");
	context("var:a.b+1", true, "unexpected '+1'");
	context("var:a[", true, "no closing ']'");
	context("var:a[]", true, "expected a number");
	context("var:a[-1]", true, "bad index");
	context("var:a[i]", true, "bad index");
	context("var:x:float", true, "unknown type 'float'");
	context("var:x:int:8", true, "unknown type");
	context("args:x", true, "args takes no argument");
	context("var:a_very_long_structure_name->a_very_long_member_name.and_more", true,
		"longer than 56 bytes");
	var("var:len", "len", "len", NULL);
	var("var:req->len", "req_len", "req->len", NULL);
	var("var:cfg.opts[2]", "cfg_opts_2", "cfg.opts[2]", NULL);
	var("var:*p", "deref_p", "*p", NULL);
	var("var:**pp", "deref_deref_pp", "**pp", NULL);
	var("var:argv[1]", "argv_1", "argv[1]", NULL);
	var("var:*req->next->name", "deref_req_next_name", "*req->next->name", NULL);
	var("var:t.a[0x10].b", "t_a_16_b", "t.a[16].b", NULL);
	var("var:req->id:uint16", "req_id", "req->id", "uint16");
	var("var:x:int", "x", "x", "int");
	var("var:name:string", "name", "name", "string");

	if (argc < 2)
		return tap_done();
	obj = dp_object_open(argv[1]);
	tap_ok(obj != NULL, "open %s", argv[1]);
	if (!obj)
		return tap_done();
	resolve(obj, "foo", 0, 0, NULL);
	resolve(obj, "foo+0x6", 0, 6, NULL);
	resolve(obj, "foo+015", 0, 0xd, NULL);
	resolve(obj, "foo+5", -EINVAL, 0,
		"foo+0x5 is inside an instruction of foo: the nearest instructions start at foo+0x4 "
		"and foo+0x6");
	resolve(obj, "foo+0xe", -ERANGE, 0, "past the end of foo (14 bytes");
	resolve(obj, "fooo", -ENOENT, 0, "did you mean 'foo'");
	resolve(obj, "0x1", -ENOENT, 0, "not inside any function");
	{
		const struct dp_function *foo = dp_object_function_by_name(obj, "foo");
		char addr[32];

		snprintf(addr, sizeof(addr), "%#llx", (unsigned long long)(foo->start + 9));
		resolve(obj, addr, 0, 9, NULL);
		snprintf(addr, sizeof(addr), "%#llx", (unsigned long long)(foo->start + 10));
		resolve(obj, addr, -EINVAL, 0, "inside an instruction of foo");
	}
	resolve(obj, "fo*", -EINVAL, 0, "'fo*' is a pattern: it names functions for --function");
	{
		const struct dp_function **fns = NULL;
		size_t n = 0;
		int ret;

		dp_spec_location_parse("[bf]?[or]", &loc, &err);
		ret = dp_spec_functions_match(obj, argv[1], &loc, &fns, &n, &err);
		tap_ok(!ret && n == 2 && fns[0]->start < fns[1]->start &&
		       ((!strcmp(fns[0]->name, "foo") && !strcmp(fns[1]->name, "bar")) ||
			(!strcmp(fns[0]->name, "bar") && !strcmp(fns[1]->name, "foo"))),
		       "'[bf]?[or]' matches foo and bar, once each, by address (%d, %zu)", ret, n);
		free(fns);
		dp_spec_location_parse("nothing_*", &loc, &err);
		ret = dp_spec_functions_match(obj, argv[1], &loc, &fns, &n, &err);
		tap_ok(ret == -ENOENT && !fns && strstr(err.msg, "no function of ") &&
		       strstr(err.msg, "matches 'nothing_*'"), "'nothing_*' matches nothing: %s",
		       err.msg);
	}
	dp_object_close(obj);
	return tap_done();
}
