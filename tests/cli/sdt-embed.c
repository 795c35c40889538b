/*
 * python3.11 as a program linked to libpython3.11.so.1.0 (Debian's
 * libpython3.11): the interpreter, and so CPython's SDT probes and their
 * semaphores, live in a shared library here, not in the executable as in
 * /usr/bin/python3.11.  test-sdt-real.sh runs sdt-calls.py with it.
 */
int Py_BytesMain(int argc, char **argv);

int main(int argc, char **argv)
{
	return Py_BytesMain(argc, argv);
}
