/* The engine's corpus functions that led-target.c calls (tests/engine/corpus). */
#include "../engine/corpus/redirect-ret.S"
#include "../engine/corpus/led-ret.S"
#include "../engine/corpus/redirect-cold.S"
#include "../engine/corpus/inner-ret.S"
