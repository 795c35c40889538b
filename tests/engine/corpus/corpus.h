/*
 * Shared by the corpus's assembly files: Intel syntax, one global function
 * per macro pair with its ELF type and size (function analysis takes the
 * bounds from the symbol table), and a non-executable stack.
 */
#ifndef DP_CORPUS_H
#define DP_CORPUS_H

#define FUNC(name) \
	.text; .p2align 4, 0xcc; .globl name; .type name, @function; name:
#define END(name) .size name, . - name
/* A label inside a function that the test probes besides entry and returns. */
#define SITE(name) .globl name; name:

	.intel_syntax noprefix
	.section .note.GNU-stack, "", @progbits

#endif
