# The Python program test-sdt-real.sh records CPython's own SDT probes in
# (provider python, /usr/bin/python3.11).  It prints what its probes would
# be given (the test's oracle): at start "pid PID", "def LINE" (the line of
# `def target`, from its code object), "body LINE" (the line of its one
# statement, from the code object's line table), "file FILE" and "name
# NAME" (its code object's file and function names); then each command read
# on stdin runs once, then "total T" (what the calls computed) and "ok",
# flushed:
#
#   c N   calls target() N times from a loop, under cProfile: N
#         python:function__entry events of target, each with the def's
#         line, and N python:line events of target with its body's line
#   g K   makes K reference cycles of two lists, drops them and collects
#         the oldest generation: prints "gc 2 FOUND", FOUND what
#         gc.collect(2) returns (python:gc__start's arg0 is 2, gc__done's
#         FOUND); automatic collection is off, so that no other runs
#   q     exits
#
# Under cProfile: CPython 3.11 fires function__entry, function__return and
# line only on its tracing path (a profile or trace function set, or
# generator.throw() for function__entry), not on ordinary calls (CPython
# issue gh-98894).  cProfile's profile function is C: it runs no Python
# function of its own.
import cProfile
import gc
import os
import sys


def target(i):
    return i * 2


def main():
    code = target.__code__
    print("pid", os.getpid())
    print("def", code.co_firstlineno)
    print("body", max(line for _, _, line in code.co_lines() if line is not None))
    print("file", code.co_filename)
    print("name", code.co_name)
    sys.stdout.flush()
    total = 0
    gc.disable()
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
        elif cmd[0] == "g":
            cycles = []
            for _ in range(int(cmd[1])):
                a = []
                cycles.append([a])
                a.append(cycles[-1])
            del cycles[:]
            print("gc", 2, gc.collect(2))
        elif cmd[0] == "q":
            break
        print("total", total)
        print("ok")
        sys.stdout.flush()


main()
