/*
 * A shared library with an SDT probe (test-sdt-enable.sh): its site is
 * relocated with the library, its argument is the caller's.
 */
#include <sys/sdt.h>

int sdt_lib_call(int x);

int sdt_lib_call(int x)
{
	DTRACE_PROBE2(sdt_lib, call, x, -x);
	return x * 2;
}
