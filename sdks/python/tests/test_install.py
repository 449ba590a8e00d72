"""`pip install` of the SDK into a fresh virtualenv, offline, as README.md's "Install" says.

Uses Debian's /usr/bin/python3 with python3-venv and python3-wheel-whl (the wheels of setuptools and wheel
under /usr/share/python-wheels are the only build requirements; nothing comes from a package index).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

SDK = Path(__file__).resolve().parents[1]
SYSTEM_PYTHON = "/usr/bin/python3"
WHEELS = "/usr/share/python-wheels"

CHECK = r"""
import json, sys
from workroom import WebhookReceiver, WorkroomClient, WorkroomError, verify_signature
import workroom
assert "site-packages" in workroom.__file__, workroom.__file__
vectors = json.load(open(sys.argv[1], encoding="utf-8"))
ok = 0
for v in vectors["vectors"]:
    headers = {"webhook-id": v["webhook_id"], "webhook-timestamp": str(v["webhook_timestamp"]),
               "webhook-signature": v["webhook_signature"]}
    ok += verify_signature(v["body"].encode("utf-8"), headers, v["secret"], now=v["webhook_timestamp"])
print(ok, len(vectors["vectors"]), WorkroomClient("http://localhost:3000", "k"), WebhookReceiver(secret=v["secret"]))
"""


class InstallTest(unittest.TestCase):
    def test_pip_install_into_a_fresh_venv_without_an_index(self) -> None:
        tmp = Path(tempfile.mkdtemp(prefix="workroom-py-install-"))
        self.addCleanup(shutil.rmtree, tmp, True)
        # Copy the sources: an in-tree build would leave build/ and *.egg-info behind in the repository.
        src = tmp / "sdk"
        shutil.copytree(SDK, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", ".mypy_cache"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        env["PIP_CONFIG_FILE"] = os.devnull  # no configured index or find-links: only what the README uses
        venv = tmp / "venv"
        subprocess.run([SYSTEM_PYTHON, "-m", "venv", str(venv)], check=True, env=env)
        pip = subprocess.run(
            [str(venv / "bin" / "pip"), "install", "--no-index", "--find-links", WHEELS, str(src)],
            capture_output=True,
            text=True,
            env=env,
        )
        self.assertEqual(pip.returncode, 0, pip.stdout + pip.stderr)
        self.assertIn("Successfully installed workroom-0.1.0", pip.stdout)
        run = subprocess.run(
            [str(venv / "bin" / "python"), "-c", CHECK, str(SDK.parent / "test-vectors.json")],
            capture_output=True,
            text=True,
            cwd=str(tmp),
            env=env,
        )
        self.assertEqual(run.returncode, 0, run.stderr)
        verified, total = run.stdout.split()[:2]
        self.assertEqual(verified, total)


if __name__ == "__main__":
    unittest.main()
