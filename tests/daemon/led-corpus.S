/* The engine's corpus functions that led-target.c calls (tests/engine/corpus). */
#include "../engine/corpus/corpus.h"

/* Never called: 144 bytes of code and no fill right before
 * dp_c_redirect_ret, so that no fill before it is in a rel8's reach,
 * whatever the size of led-target.c's code: its redirect's hop and
 * dp_c_led_ret's led window then share the fill between the two
 * (test-combine-adopt.sh: their windows meet). */
FUNC(dp_c_spacer)
	.fill 143, 1, 0x90
	ret
END(dp_c_spacer)

#include "../engine/corpus/redirect-ret.S"
#include "../engine/corpus/led-ret.S"
#include "../engine/corpus/redirect-cold.S"
#include "../engine/corpus/inner-ret.S"
