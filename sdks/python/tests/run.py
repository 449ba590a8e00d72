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
result = unittest.TextTestRunner(verbosity=2 if "-v" in sys.argv else 1).run(suite)
failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
passed = result.testsRun - failed - len(result.skipped)
print(f"python-sdk: {passed} passed, {failed} failed")
if os.environ.get("PYTHON_SDK_RESULTS"):  # for CI summaries: {"passed": N, "failed": N}
    Path(os.environ["PYTHON_SDK_RESULTS"]).write_text(json.dumps({"passed": passed, "failed": failed}))
sys.exit(0 if result.wasSuccessful() else 1)
