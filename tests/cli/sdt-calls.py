# The Python program test-sdt-real.sh records CPython's own SDT probes in
# (provider python, /usr/bin/python3.11).  It prints what its probes would
# be given (the test's oracle): at start "pid PID", "def LINE" (the line of
# `def target`, from its code object), "file FILE" (its code object's file
# name); then each command read on stdin runs once, then "ok", flushed:
#
#   c N   calls target() N times from a loop, under cProfile: N
#         python:function__entry events of target, each with the def's line
#   q     exits
#
# Under cProfile: CPython 3.11 fires function__entry only on its tracing
# path (a profile or trace function set, or generator.throw()), not on
# ordinary calls (CPython issue gh-98894, fixed after 3.11).  cProfile's
# profile function is C: it runs no Python function of its own.  The `line`
# probe is not used: 3.11 crashes when it is enabled (same issue).
import cProfile
import os
import sys


def target(i):
    return i * 2


def main():
    code = target.__code__
    print("pid", os.getpid())
    print("def", code.co_firstlineno)
    print("file", code.co_filename)
    print("name", code.co_name)
    sys.stdout.flush()
    total = 0
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "c":
            prof = cProfile.Profile()
            prof.enable()
            for i in range(int(cmd[1])):
                total += target(i)
            prof.disable()
        elif cmd[0] == "q":
            break
        print("total", total)
        print("ok")
        sys.stdout.flush()


main()
