#!/bin/bash
# The spec layer's unit test, with cli-target to resolve locations in.
exec "$top_builddir/tests/cli/test-spec" "$top_builddir/tests/cli/cli-target"
