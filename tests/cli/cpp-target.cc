/*
 * A C++ program to probe by source names (tests/cli/test-cpp.sh): a
 * namespace, overloads, a function template, an operator, a constructor
 * and destructor, virtual methods called through base pointers, a lambda,
 * and an exception thrown through three frames.  It counts its own calls
 * and prints the counters, which the test holds the trace to.
 *
 * Usage: cpp-target N [wait]   N rounds of everything (every 3rd check
 * throws); with "wait", after a line of stdin (probes go in meanwhile).
 */
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

/* Every probed function stays one whole function under its own name: no
 * inlining, and with g++ no .isra/.constprop clone in its place either. */
#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noipa))
#endif

namespace shop {

struct Counters {
	unsigned long add_int, add_double, plus_eq, ctor, dtor, area, lambda, biggest_int,
		biggest_double, checks, thrown, caught;
};
static Counters counts;

/* Keeps the compiler from folding calls away. */
static volatile int sink;

class Cart {
public:
	NOINLINE explicit Cart(int start) : total_(start) { counts.ctor++; sink = start; }
	NOINLINE ~Cart() { counts.dtor++; sink = total_; }
	NOINLINE int add(int v) { counts.add_int++; return total_ += v; }
	NOINLINE double add(double v) { counts.add_double++; total_ += (int)v; return total_ + v; }
	NOINLINE Cart &operator+=(int v) { counts.plus_eq++; total_ += v; return *this; }
	int total() const { return total_; }

private:
	int total_;
};

struct Shape {
	virtual ~Shape() {}
	virtual long area() const = 0;
};

struct Square : Shape {
	explicit Square(long s) : side(s) {}
	NOINLINE long area() const override { counts.area++; return side * side; }
	long side;
};

struct Rect : Shape {
	Rect(long w, long h) : w(w), h(h) {}
	NOINLINE long area() const override { counts.area++; return w * h; }
	long w, h;
};

template <typename T> NOINLINE T biggest(T a, T b)
{
	if (sizeof(T) == sizeof(int))
		counts.biggest_int++;
	else
		counts.biggest_double++;
	sink = (int)a;
	return a > b ? a : b;
}

/* The exception's path: check throws, pass lets it through, guard catches. */
NOINLINE int check(int v)
{
	counts.checks++;
	if (v % 3 == 0) {
		counts.thrown++;
		throw std::runtime_error("multiple of 3: " + std::to_string(v));
	}
	sink = v;
	return v * 2;
}

NOINLINE int pass(int v)
{
	int r = check(v) + 1;

	sink = r;
	return r;
}

NOINLINE int guard(int v)
{
	try {
		return pass(v);
	} catch (const std::runtime_error &e) {
		counts.caught++;
		std::printf("caught: %s\n", e.what());
		return -1;
	}
}

NOINLINE long shapes(Shape *const *all, int n)
{
	long sum = 0;

	for (int i = 0; i < n; i++)
		sum += all[i]->area();
	return sum;
}

} // namespace shop

/* Two functions under the symbols rustc would give mycrate::legacy (its
 * legacy mangling, with a hash) and mycrate::vzero (v0), so that Rust
 * names are tested without a Rust compiler. */
extern "C" int rust_legacy(int v) __asm__("_ZN7mycrate6legacy17h0123456789abcdefE");
extern "C" int rust_vzero(int v) __asm__("_RNvCs1234_7mycrate5vzero");
static unsigned long n_legacy, n_vzero;

extern "C" NOINLINE int rust_legacy(int v)
{
	n_legacy++;
	return v + 1;
}

extern "C" NOINLINE int rust_vzero(int v)
{
	n_vzero++;
	return v + 2;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 10;
	auto twice = [](int v) {
		shop::counts.lambda++;
		return v * 2;
	};
	/* Called through a pointer the compiler cannot see through, so that
	 * the lambda's operator() stays a function of its own (clang ignores
	 * noinline on a lambda). */
	int (decltype(twice)::*volatile call)(int) const = &decltype(twice)::operator();
	long sum = 0;

	if (argc > 2 && std::string(argv[2]) == "wait")
		std::getchar();
	for (int i = 1; i <= n; i++) {
		shop::Cart cart(i);
		shop::Square sq(i);
		shop::Rect rect(i, 2);
		shop::Shape *all[] = { &sq, &rect };

		cart.add(i);
		cart.add(0.5 * i);
		cart += i;
		sum += cart.total() + shop::shapes(all, 2) + (twice.*call)(i);
		sum += shop::biggest(i, 3) + (long)shop::biggest(1.5 * i, 2.0);
		sum += shop::guard(i);
		sum += rust_legacy(i) + rust_vzero(i);
	}
	const shop::Counters &c = shop::counts;
	std::printf("sum=%ld\n", sum);
	std::printf("add_int=%lu add_double=%lu plus_eq=%lu ctor=%lu dtor=%lu area=%lu "
		    "lambda=%lu biggest_int=%lu biggest_double=%lu checks=%lu thrown=%lu "
		    "caught=%lu legacy=%lu vzero=%lu\n", c.add_int, c.add_double, c.plus_eq, c.ctor, c.dtor, c.area,
		    c.lambda, c.biggest_int, c.biggest_double, c.checks, c.thrown, c.caught,
		    n_legacy, n_vzero);
	return 0;
}
