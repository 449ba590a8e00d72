"""Runs every test under sdks/python/tests; prints unittest's summary and "python-sdk: N passed, N failed"."""

import json
import os
import sys
import unittest
from pathlib import Path

here = Path(__file__).resolve().parent
suite = unittest.defaultTestLoader.discover(str(here), pattern="test_*.py", top_level_dir=str(here))
# The example bot's own tests, written with workroom.testing (examples/python-bot/test_bot.py).
example = here.parents[2] / "examples" / "python-bot"
suite.addTests(unittest.defaultTestLoader.discover(str(example), pattern="test_*.py", top_level_dir=str(example)))


def talks_to_a_server(test: unittest.TestCase) -> bool:
    """A test of a module that starts a Workroom server (_server.WorkroomServer); also a module that
    failed to load (unittest's _FailedTest), so that its error shows in every run."""
    module = sys.modules.get(type(test).__module__)
    return hasattr(module, "WorkroomServer") or type(test).__name__ == "_FailedTest"


def tests_of(s: unittest.TestSuite) -> "list[unittest.TestCase]":
    out: "list[unittest.TestCase]" = []
    for t in s:
        if isinstance(t, unittest.TestSuite):
            out.extend(tests_of(t))
        elif isinstance(t, unittest.TestCase):
            out.append(t)
    return out


# --server-only: only the tests that talk to a server, for a second run on another database (CI's run on
# PostgreSQL); the others (signatures, the receiver, the harness, the install) test nothing the database
# changes, and ran once already.
if "--server-only" in sys.argv:
    suite = unittest.TestSuite([t for t in tests_of(suite) if talks_to_a_server(t)])
result = unittest.TextTestRunner(verbosity=2 if "-v" in sys.argv else 1).run(suite)
failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
passed = result.testsRun - failed - len(result.skipped)
print(f"python-sdk: {passed} passed, {failed} failed")
if os.environ.get("PYTHON_SDK_RESULTS"):  # for CI summaries: {"passed": N, "failed": N}
    Path(os.environ["PYTHON_SDK_RESULTS"]).write_text(json.dumps({"passed": passed, "failed": failed}))
sys.exit(0 if result.wasSuccessful() else 1)
