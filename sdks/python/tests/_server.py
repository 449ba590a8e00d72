"""Starts a real Workroom server (node server/dist/main.js) for the tests, and sets up a world through the
REST API with the admin's token. Talks HTTP with urllib directly, not through the SDK under test.

On PostgreSQL (DATABASE_URL set) each server gets a schema of its own, dropped with psql afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

REPO = Path(__file__).resolve().parents[3]
# WORKROOM_TEST_SERVER_MAIN runs another build of the server (e.g. of a clean checkout) instead.
MAIN = Path(os.environ.get("WORKROOM_TEST_SERVER_MAIN") or REPO / "server" / "dist" / "main.js")
ADMIN_EMAIL = "admin@python-sdk.test"
ADMIN_PASSWORD = "python-sdk-password"


def wait_for(predicate: Callable[[], object], seconds: float = 45.0) -> bool:
    """Polls until ``predicate()`` is true or the time is up; answers whether it became true."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http(
    method: str,
    url: str,
    body: Optional[Mapping[str, Any]] = None,
    token: Optional[str] = None,
    headers: Optional[Mapping[str, str]] = None,
) -> Tuple[int, Dict[str, str], Any]:
    h = {"Accept": "application/json"}
    if token:
        h["Authorization"] = f"Bearer {token}"
    data = None
    if body is not None:
        data = json.dumps(body).encode("utf-8")
        h["Content-Type"] = "application/json"
    h.update(headers or {})
    req = urllib.request.Request(url, data=data, headers=h, method=method)
    try:
        with urllib.request.urlopen(req, timeout=15) as res:
            raw, status, hdrs = res.read(), res.status, res.headers
    except urllib.error.HTTPError as err:
        raw, status, hdrs = err.read(), err.code, err.headers
    text = raw.decode("utf-8")
    return status, {k.lower(): v for k, v in hdrs.items()}, (json.loads(text) if text else None)


class WorkroomServer:
    def __init__(self, **env: str) -> None:
        if not MAIN.exists():
            raise RuntimeError(f"{MAIN} is missing: run `npm run build` at the repository root first")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data_dir = tempfile.mkdtemp(prefix="workroom-py-")
        self.schema: Optional[str] = None
        full = dict(os.environ)
        full.update(
            PORT=str(self.port),
            HOST="127.0.0.1",
            WORKROOM_DATA_DIR=self.data_dir,
            WORKROOM_ADMIN_EMAIL=ADMIN_EMAIL,
            WORKROOM_ADMIN_PASSWORD=ADMIN_PASSWORD,
            WORKROOM_LOG_LEVEL="warn",
        )
        if os.environ.get("DATABASE_URL"):
            self.schema = "py_sdk_" + uuid.uuid4().hex[:12]
            full["WORKROOM_DATABASE_SCHEMA"] = self.schema
        full.update(env)
        self.log_path = os.path.join(self.data_dir, "server.log")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(["node", str(MAIN)], cwd=str(REPO), env=full, stdout=self._log, stderr=self._log)
        self._wait_until_up()
        status, _, body = http(
            "POST", self.url + "/api/auth/login", {"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD}
        )
        assert status == 200, (status, body)
        self.admin_token: str = body["token"]

    def _wait_until_up(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("the server exited:\n" + Path(self.log_path).read_text(errors="replace"))
            try:
                status, _, _ = http("GET", self.url + "/api/health")
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("the server did not start within 60 s")

    def admin(self, method: str, path: str, body: Optional[Mapping[str, Any]] = None) -> Any:
        """A management call as the system_admin; fails the test setup on any non-2xx answer."""
        status, _, answer = http(method, self.url + path, body, self.admin_token)
        if not 200 <= status < 300:
            raise AssertionError(f"{method} {path} answered {status}: {answer}")
        return answer

    def world(self, scopes: Optional[List[str]] = None) -> Dict[str, Any]:
        """A channel, a project with a topic, a member user and a bot in all of them with an API key."""
        tag = uuid.uuid4().hex[:8]
        channel = self.admin("POST", "/api/channels", {"name": f"py-{tag}"})
        project = self.admin("POST", "/api/projects", {"name": f"py-project-{tag}"})
        topic = self.admin("POST", f"/api/projects/{project['id']}/topics", {"name": "sdk"})
        user = self.admin(
            "POST",
            "/api/users",
            {
                "email": f"alice-{tag}@python-sdk.test",
                "display_name": f"Alice {tag}",
                "password": "alice-password",
                "department": "Engineering",
            },
        )
        bot = self.admin("POST", "/api/bots", {"name": f"py-bot-{tag}", "events": ["message.created"]})
        key_body: Dict[str, Any] = {} if scopes is None else {"scopes": scopes}
        key = self.admin("POST", f"/api/bots/{bot['bot_id']}/api-keys", key_body)
        self.admin("POST", f"/api/channels/{channel['id']}/members", {"bot_id": bot["bot_id"]})
        self.admin("POST", f"/api/channels/{channel['id']}/members", {"user_id": user["id"]})
        self.admin("POST", f"/api/projects/{project['id']}/members", {"bot_id": bot["bot_id"]})
        return {
            "channel_id": channel["id"],
            "project_id": project["id"],
            "topic_id": topic["id"],
            "user": user,
            "bot_id": bot["bot_id"],
            "key": key["key"],
        }

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        if self.schema:
            subprocess.run(
                ["psql", os.environ["DATABASE_URL"], "-q", "-c", f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE'],
                check=False,
                stdout=subprocess.DEVNULL,
                env={**os.environ, "PGOPTIONS": "-c client_min_messages=warning"},
            )
        shutil.rmtree(self.data_dir, ignore_errors=True)
