/*
 * What the files of elf/ share beyond the folder's contract (elf.h): the
 * raw list of function symbols, and the demangled-name index that
 * elf-names.c keeps in each struct dp_elf.
 */
#ifndef DP_ELF_INTERNAL_H
#define DP_ELF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "elf/elf.h"

struct elf_names {
	bool ready;
	struct dp_elf_name *v;	/* sorted by start, then symbol */
	size_t n;
};

/*
 * Every function symbol of .symtab and .dynsym, aliases and duplicates
 * included (dp_elf_funcs folds them): *syms malloc'd, names owned by elf.
 * 0, -ENOMEM or -ELIBBAD.
 */
int elf_symbols_all(struct dp_elf *elf, struct dp_func **syms, size_t *n);

/* The index slot of elf (elf-funcs.c owns the struct), and its release. */
struct elf_names *elf_names_of(struct dp_elf *elf);
void elf_names_release(struct elf_names *names);

#endif /* DP_ELF_INTERNAL_H */
