/*
 * The C++ program test-sdt-real.sh records libstdc++'s own SDT probes in
 * (provider libstdcxx: throw, catch, rethrow, in __cxa_throw,
 * __cxa_begin_catch and __cxa_rethrow).  It prints what each probe is given,
 * as babeltrace2 prints the fields (the test's oracle): the exception
 * object's address (arg0) and its std::type_info's (arg1, &typeid(Boom)).
 * Each command read on stdin runs once, then "ok", flushed:
 *
 *   t N   throws N Boom, each caught by reference: N throws, N catches
 *         (each kept alive until the round ends: N distinct objects)
 *   r     throws one Boom, catches it, rethrows it with `throw;` and
 *         catches it again: one throw, one rethrow, two catches
 *   q     exits
 *
 * At start: "typeinfo ADDR" (&typeid(Boom)) and "pid PID".
 */
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <typeinfo>
#include <vector>
#include <unistd.h>

struct Boom {
	int serial;
	char pad[20];
};

static std::uintptr_t ti(void)
{
	return reinterpret_cast<std::uintptr_t>(&typeid(Boom));
}

static void event(const char *name, const Boom &b)
{
	std::printf("libstdcxx:%s { arg0 = %" PRIuPTR ", arg1 = %" PRIuPTR " }\n", name,
		    reinterpret_cast<std::uintptr_t>(&b), ti());
}

__attribute__((noinline)) static void thrower(int serial)
{
	throw Boom{serial, {0}};
}

static std::vector<std::exception_ptr> kept;

/* Throws and catches one Boom; its object is only known in the handler,
 * so the throw's line is printed there, before the catch's. */
static void one(int serial)
{
	try {
		thrower(serial);
	} catch (const Boom &b) {
		event("throw", b);
		event("catch", b);
		kept.push_back(std::current_exception());
	}
}

static void rethrown(int serial)
{
	try {
		try {
			thrower(serial);
		} catch (const Boom &b) {
			event("throw", b);
			event("catch", b);
			event("rethrow", b);
			throw;
		}
	} catch (const Boom &b) {
		event("catch", b);
	}
}

int main(void)
{
	char line[64];
	int serial = 0;

	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	std::printf("typeinfo %" PRIuPTR "\npid %d\n", ti(), (int)getpid());
	while (std::fgets(line, sizeof(line), stdin)) {
		int n;

		if (std::sscanf(line, "t %d", &n) == 1) {
			for (int i = 0; i < n; i++)
				one(++serial);
			kept.clear();
		} else if (!std::strcmp(line, "r\n")) {
			rethrown(++serial);
		} else if (!std::strcmp(line, "q\n")) {
			break;
		}
		std::printf("ok\n");
	}
	return 0;
}
