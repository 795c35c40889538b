/*
 * Allocates each size given on the command line (and frees it), printing
 * each: test-vars.sh records libc's malloc's `bytes` parameter by name.
 */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		size_t n = strtoul(argv[i], NULL, 0);
		void *volatile p = malloc(n);

		printf("malloc %zu\n", n);
		free(p);
	}
	return 0;
}
