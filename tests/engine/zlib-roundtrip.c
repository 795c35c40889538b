/*
 * A small zlib user for the patch-everything test: compresses or
 * decompresses stdin to stdout through libz's streaming interface, in small
 * chunks so that deflate/inflate and their helpers run many times, and
 * prints to stderr the CRC-32 and Adler-32 of its input and how many times it
 * called deflate/inflate and crc32: the test compares those with the calls
 * the probes counted.
 *
 *   zlib-roundtrip c LEVEL <in >out      zlib-roundtrip d <in >out
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define CHUNK 16384

static int run(z_stream *s, int compress, FILE *in, FILE *out)
{
	static unsigned char ibuf[CHUNK], obuf[CHUNK];
	uLong adler = adler32(0, NULL, 0), crc = crc32(0, NULL, 0);
	unsigned long ncodec = 0, ncrc = 1;
	int flush = Z_NO_FLUSH, ret = Z_OK;

	do {
		size_t n = fread(ibuf, 1, CHUNK, in);

		if (ferror(in))
			return -1;
		adler = adler32(adler, ibuf, (uInt)n);
		crc = crc32(crc, ibuf, (uInt)n);
		ncrc++;
		if (compress)
			flush = feof(in) ? Z_FINISH : Z_NO_FLUSH;
		else if (!n)
			break;
		s->next_in = ibuf;
		s->avail_in = (uInt)n;
		do {
			s->next_out = obuf;
			s->avail_out = CHUNK;
			ret = compress ? deflate(s, flush) : inflate(s, Z_NO_FLUSH);
			ncodec++;
			if (ret == Z_STREAM_ERROR || ret == Z_DATA_ERROR || ret == Z_MEM_ERROR ||
			    ret == Z_NEED_DICT)
				return -1;
			if (fwrite(obuf, 1, CHUNK - s->avail_out, out) != CHUNK - s->avail_out)
				return -1;
		} while (s->avail_out == 0);
	} while (compress ? flush != Z_FINISH : ret != Z_STREAM_END);
	fprintf(stderr, "adler32 %08lx crc32 %08lx\n", adler, crc);
	fprintf(stderr, "calls %s %lu crc32 %lu\n", compress ? "deflate" : "inflate", ncodec, ncrc);
	return compress || ret == Z_STREAM_END ? 0 : -1;
}

int main(int argc, char **argv)
{
	z_stream s;
	int compress, ret;

	if (argc < 2 || (strcmp(argv[1], "c") && strcmp(argv[1], "d"))) {
		fprintf(stderr, "usage: zlib-roundtrip c LEVEL | d\n");
		return 2;
	}
	compress = argv[1][0] == 'c';
	memset(&s, 0, sizeof(s));
	if (compress)
		ret = deflateInit(&s, argc > 2 ? atoi(argv[2]) : Z_DEFAULT_COMPRESSION);
	else
		ret = inflateInit(&s);
	if (ret != Z_OK)
		return 1;
	ret = run(&s, compress, stdin, stdout);
	if (compress)
		deflateEnd(&s);
	else
		inflateEnd(&s);
	if (ret) {
		fprintf(stderr, "zlib-roundtrip: %s failed\n", compress ? "deflate" : "inflate");
		return 1;
	}
	return 0;
}
