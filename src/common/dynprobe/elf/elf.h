/*
 * ELF objects: the contract.
 *
 * Opens an x86-64 executable or shared object (ELF64, little endian, ET_EXEC
 * or ET_DYN) and answers what function analysis needs before any process is
 * touched: which functions the file holds and where they start and end, the
 * bytes of their code, the object's type and its build-id, and the names
 * of C++ and Rust functions as their authors wrote them (demangled), and
 * the statically defined probes (SDT) its notes describe.
 *
 * Function bounds come from .symtab and .dynsym (STT_FUNC, STT_GNU_IFUNC with
 * a size, inside an executable section) and, for code no symbol describes
 * (stripped objects), from the FDEs of .eh_frame.  Addresses are virtual
 * addresses as the file states them (as nm and objdump print them), before
 * any load bias.
 *
 * Everything returned by pointer is owned by the struct dp_elf and stays
 * valid until dp_elf_close().  A struct dp_elf is not thread-safe.
 */
#ifndef DP_ELF_H
#define DP_ELF_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "err.h"

struct dp_elf;
struct Elf;

/*
 * Errors of dp_elf_open() beyond those of open(2) and malloc(3), in errno.
 * dp_elf_strerror() words them for users.
 */
#define DP_ELF_ENOTELF	ENOEXEC		/* not an ELF file (or not a regular file) */
#define DP_ELF_EFORMAT	ENOTSUP		/* ELF, but not an x86-64 ELF64 EXEC or DYN */
#define DP_ELF_ECORRUPT	ELIBBAD		/* truncated or inconsistent ELF */

enum dp_elf_type {
	DP_ELF_EXEC,		/* ET_EXEC: loaded at its link addresses */
	DP_ELF_DYN,		/* ET_DYN: shared object or PIE, loaded with a bias */
};

/* Where a function's bounds were found; several bits when sources agree. */
enum dp_func_flag {
	DP_FUNC_SYMTAB = 1u << 0,	/* a .symtab symbol has exactly these bounds */
	DP_FUNC_DYNSYM = 1u << 1,	/* a .dynsym symbol has exactly these bounds */
	DP_FUNC_EH_FRAME = 1u << 2,	/* an .eh_frame FDE has exactly these bounds */
	DP_FUNC_IFUNC = 1u << 3,	/* the symbol is an IFUNC resolver */
	DP_FUNC_GLOBAL = 1u << 4,	/* some symbol of it is global or weak */
	DP_FUNC_NOCODE = 1u << 5,	/* its section has no bytes in the file (NOBITS) */
};

struct dp_func {
	const char *name;	/* preferred symbol name, NULL if known only from .eh_frame */
	uint64_t start;		/* virtual address of the first byte */
	uint64_t size;		/* bytes, > 0 */
	unsigned int flags;	/* enum dp_func_flag */
};

/*
 * Opens path.  Returns NULL and sets errno on failure: the errors of open(2),
 * EISDIR, ENOMEM, or one of the DP_ELF_E* above.
 */
struct dp_elf *dp_elf_open(const char *path);
void dp_elf_close(struct dp_elf *elf);

/* A message for an errno set by dp_elf_open() (strerror() for the others). */
const char *dp_elf_strerror(int err);

const char *dp_elf_path(const struct dp_elf *elf);
/* The open file's status (fstat(2): the file opened, even once its path
 * names another).  0 or -errno. */
int dp_elf_stat(const struct dp_elf *elf, struct stat *st);
enum dp_elf_type dp_elf_type(const struct dp_elf *elf);

/*
 * The NT_GNU_BUILD_ID note's bytes.  Returns 0, or -ENOENT when the object
 * has none.
 */
int dp_elf_build_id(struct dp_elf *elf, const uint8_t **id, size_t *len);

/*
 * Every function, sorted by start address then size.  Ranges that several
 * symbols share (aliases) appear once, under the most public name: global
 * before weak before local, then fewer leading underscores, then shorter.
 * Ranges may nest or overlap when symbols say so; an FDE range is listed
 * only where no symbol range overlaps it.  Computed on the first call.
 * Returns 0, -ENOMEM, or -ELIBBAD for a malformed symbol table.
 */
int dp_elf_funcs(struct dp_elf *elf, const struct dp_func **funcs, size_t *n);

/*
 * The function whose range holds vaddr; the innermost one (the latest
 * start) when ranges nest.  NULL with errno ENOENT when none does.
 */
const struct dp_func *dp_elf_func_at(struct dp_elf *elf, uint64_t vaddr);

/*
 * The file's bytes for [vaddr, vaddr + size), which must lie within one
 * executable section (dp_elf_code) or any allocated section (dp_elf_bytes).
 * The pointer is into the mapped file: read-only.  NULL with errno ENOENT when
 * no such section holds the whole range, ENODATA when it has no bytes in the
 * file (SHT_NOBITS, as in separate debug files).
 */
const uint8_t *dp_elf_code(struct dp_elf *elf, uint64_t vaddr, uint64_t size);
const uint8_t *dp_elf_bytes(struct dp_elf *elf, uint64_t vaddr, uint64_t size);

/*
 * Function names as their authors wrote them (elf-names.c): one entry per
 * function symbol of .symtab and .dynsym whose name is a C++ or Rust
 * mangled name, aliases each (a constructor's C1 and C2, a destructor's
 * D0, D1 and D2), sorted by start address then symbol.  Computed on the
 * first call.  0, -ENOMEM or -ELIBBAD.
 */
struct dp_elf_name {
	const char *symbol;	/* "_ZN4shop4Cart3addEi" */
	const char *full;	/* "shop::Cart::add(int)": with the parameter list and
				 * qualifiers, without a template's return type */
	const char *base;	/* "shop::Cart::add": without the parameter list */
	uint64_t start;
	uint64_t size;
	bool clone;		/* a compiler's copy or part: .cold, .part.N, .isra.N */
};
int dp_elf_names(struct dp_elf *elf, const struct dp_elf_name **names, size_t *n);

/*
 * The demangled form of one symbol, as dp_elf_name.full.  0, -EINVAL when
 * sym is no C++ or Rust mangled name, -ENAMETOOLONG when buf is too small.
 */
int dp_elf_demangle(const char *sym, char *buf, size_t size);
/* The same without the parameter list, as dp_elf_name.base. */
int dp_elf_demangle_base(const char *sym, char *buf, size_t size);

/*
 * Statically defined probes (elf-sdt.c): one entry per site of a
 * .note.stapsdt note (owner "stapsdt", type 3), as <sys/sdt.h> and
 * `dtrace -G` emit them, in note order.  One provider:name may have many
 * sites, each with its own argument spec.
 *
 * pc and semaphore are link-time addresses (as nm prints them), already
 * moved by the shift between .stapsdt.base's address and the base the note
 * recorded (non-zero when the object was prelinked); the load bias is the
 * caller's.  The strings point into the mapped file (valid until
 * dp_elf_close); *probes is malloc'd: free() it.
 *
 * 0; -ENOENT when the object has no SDT note; -ELIBBAD for a corrupt note
 * (a header, name or desc past its section, a desc shorter than its 24
 * bytes of addresses, a string not NUL-terminated within its desc, an
 * empty provider or name), refused whole, with the note's offset and the
 * reason in err; -ENOMEM.
 */
struct dp_sdt_probe {
	const char *provider;	/* "libc" */
	const char *name;	/* "memory_malloc_retry" */
	const char *args;	/* "8@%rbp -4@%edi", "" for none */
	uint64_t pc;		/* the site: a nop, or nop; nop5 */
	uint64_t base;		/* .stapsdt.base's address at link time, as recorded */
	uint64_t semaphore;	/* the 2-byte counter's address, 0 for none */
};
int dp_elf_sdt_probes(struct dp_elf *elf, struct dp_sdt_probe **probes, size_t *n,
		      struct dp_err *err);

/* The libelf handle, for readers of the same file (DWARF, notes). */
struct Elf *dp_elf_handle(struct dp_elf *elf);

#endif /* DP_ELF_H */
