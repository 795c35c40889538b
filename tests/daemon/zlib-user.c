/*
 * A program that compresses a buffer with zlib's deflate over and over, for
 * probes on a shared library's function.  Prints "ready PID"; runs until
 * killed; exits 1 if a round trip ever differs.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

int main(void)
{
	static unsigned char in[4096], out[8192], back[4096];

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)(i * 7 % 251);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		uLongf olen = sizeof(out), blen = sizeof(back);
		struct timespec ts = { 0, 2000000 };

		if (compress(out, &olen, in, sizeof(in)) != Z_OK ||
		    uncompress(back, &blen, out, olen) != Z_OK || blen != sizeof(in) ||
		    memcmp(in, back, sizeof(in)))
			return 1;
		nanosleep(&ts, NULL);
	}
}
