// Fixture for test-analysis: a try/catch and a destructor cleanup, so the
// compiler emits landing pads that no instruction branches to.
#include <cstdio>
#include <stdexcept>

extern "C" __attribute__((noinline)) int may_throw(int x)
{
	if (x > 3)
		throw std::runtime_error("too big");
	return x;
}

extern "C" __attribute__((noinline)) int catcher(int x)
{
	try {
		return may_throw(x) + 1;
	} catch (const std::runtime_error &) {
		return -1;
	} catch (...) {
		return -2;
	}
}

struct Guard {
	~Guard();
};

__attribute__((noinline)) Guard::~Guard()
{
	std::puts("cleanup");
}

extern "C" __attribute__((noinline)) int cleanup(int x)
{
	Guard g;

	return may_throw(x) * 2;
}

int main(int argc, char **)
{
	return catcher(argc) + cleanup(argc - 1);
}
