/*
 * An empty library for the target's loader thread (-l) to dlopen and
 * dlclose in a loop, keeping the loader lock busy; the tests also copy it
 * under the name liblttng-ust.so.0 to stand for an old lttng-ust.
 */
int procctl_dummy;
