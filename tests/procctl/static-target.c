/*
 * A statically linked program (no dynamic loader): the tests check that
 * attaching to load the agent is refused with a message that says why.
 */
#include <unistd.h>

int main(void)
{
	for (;;)
		pause();
}
