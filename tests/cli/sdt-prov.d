/* A provider as `dtrace -h` / `dtrace -G` users write it (sdt-args.c). */
provider sdt_prov {
	probe work(int, long);
	probe done(int);
};
