/*
 * A library dlopen(RTLD_NOW) refuses: it needs a function nothing defines.
 * The injection tests check that the target's own dlerror() comes back.
 */
void procctl_function_nobody_defines(void);
void procctl_bad(void);

void procctl_bad(void)
{
	procctl_function_nobody_defines();
}
