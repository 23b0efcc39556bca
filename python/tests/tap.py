# SPDX-License-Identifier: MIT
"""Runs the unittest modules named on the command line, in that order, and
prints TAP, one line per test case, for automake's TAP driver
(python/tests/python.sh).  Each module is imported under its file's name,
so that a later one may import an earlier one's helpers."""
import importlib.util
import os
import sys
import traceback
import unittest


class TapResult(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.n = 0

    def _line(self, test, ok, extra=""):
        self.n += 1
        name = test.id().split(".", 1)[-1]
        print("%s %d - %s%s" % ("ok" if ok else "not ok", self.n, name, extra), flush=True)

    def _diag(self, err):
        for line in "".join(traceback.format_exception(*err)).splitlines():
            print("# " + line, flush=True)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._line(test, True)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._line(test, False)
        self._diag(err)

    def addError(self, test, err):
        super().addError(test, err)
        if isinstance(test, unittest.suite._ErrorHolder):
            print("Bail out! %s" % test.id(), flush=True)
            self._diag(err)
            return
        self._line(test, False)
        self._diag(err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._line(test, True, " # SKIP " + reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._line(test, True, " # TODO expected failure")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._line(test, False, " # unexpected success")


def main():
    suite = unittest.TestSuite()
    for path in sys.argv[1:]:
        name = os.path.splitext(os.path.basename(path))[0]
        sys.path.insert(0, os.path.dirname(path))
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        suite.addTests(unittest.defaultTestLoader.loadTestsFromModule(mod))
    print("1..%d" % suite.countTestCases(), flush=True)
    result = TapResult()
    suite.run(result)
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
