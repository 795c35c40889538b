/*
 * zlib-user [N]: compresses N (default 3) small buffers with zlib's
 * deflate, for the tests that probe a function of a shared library.
 * Prints how many compressed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3, done = 0;
	unsigned char in[256], out[512];

	memset(in, 'a', sizeof(in));
	for (int i = 0; i < n; i++) {
		z_stream z;

		memset(&z, 0, sizeof(z));
		if (deflateInit(&z, Z_DEFAULT_COMPRESSION) != Z_OK)
			return 1;
		z.next_in = in;
		z.avail_in = sizeof(in);
		z.next_out = out;
		z.avail_out = sizeof(out);
		if (deflate(&z, Z_FINISH) == Z_STREAM_END)
			done++;
		deflateEnd(&z);
	}
	printf("compressed %d\n", done);
	return done == n ? 0 : 1;
}
