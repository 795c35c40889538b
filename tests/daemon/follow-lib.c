/*
 * The library follow-app dlopens (test-follow.sh): fl_work(x) = 3(x + 1),
 * in the bytes of follow-app's fw_work; fl_call(fn, x) = 2 fn(x), compiled
 * C (unwind tables, no frame pointer), a frame between two of follow-app's.
 */
int fl_work(int x);
int fl_call(int (*fn)(int), int x);

__attribute__((noinline, optimize("omit-frame-pointer"))) int fl_call(int (*fn)(int), int x)
{
	return 2 * fn(x);
}

__asm__(".text\n"
	".globl fl_work\n"
	".type fl_work, @function\n"
	"fl_work:\n"
	".byte 0x55, 0x48, 0x89, 0xe5, 0x89, 0xf8, 0x83, 0xc0, 0x01\n"
	".byte 0x6b, 0xc0, 0x03, 0x5d, 0xc3\n"
	".size fl_work, . - fl_work\n");
