"""Processes, configuration files and HTTP for the recovery benchmark.

Everything listens on and talks to 127.0.0.1 only. Every process is started in its own
session, so that stopping it (SIGTERM, then SIGKILL after a grace period) reaches its
children and nothing else.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

Conf = Mapping[str, Mapping[str, Any]]


class BenchError(Exception):
    """A run could not be made; the message says why (with log tails when useful)."""


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def write_conf(path: Path, conf: Conf) -> None:
    lines: list[str] = []
    for section, opts in conf.items():
        lines.append(f"[{section}]")
        lines.extend(f"{k} = {_value(v)}" for k, v in opts.items())
        lines.append("")
    path.write_text("\n".join(lines))


class Proc:
    """A child process leading its own session, its output in ``log_path``."""

    def __init__(
        self, argv: Sequence[str], log_path: Path, cwd: Path, env: Mapping[str, str] | None = None
    ) -> None:
        self.argv = list(argv)
        self.log_path = log_path
        env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
        with open(log_path, "wb") as log:
            self.p = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )

    def alive(self) -> bool:
        return self.p.poll() is None

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.p.pid, sig)  # the group this process leads, started above
        except (ProcessLookupError, PermissionError):
            pass

    def stop(self, grace: float = 10.0) -> None:
        if self.alive():
            self._signal(signal.SIGTERM)
            try:
                self.p.wait(grace)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.p.wait(5)
        else:
            self._signal(signal.SIGKILL)  # a child it may have left behind

    def tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return f"--- {self.log_path.name} ---\n" + "\n".join(text[-lines:])


def run_checked(
    argv: Sequence[str], cwd: Path, timeout: float, env: Mapping[str, str] | None = None
) -> None:
    try:
        done = subprocess.run(
            list(argv),
            cwd=cwd,
            env=dict(os.environ, **(env or {})),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        raise BenchError(f"{argv[0]} took over {timeout:.0f} s") from exc
    if done.returncode != 0:
        out = done.stdout.decode("utf-8", "replace")[-3000:]
        raise BenchError(f"{' '.join(argv)} failed (rc={done.returncode}):\n{out}")


class Api:
    """JSON over HTTP to a masakari API on 127.0.0.1, with one token."""

    def __init__(self, port: int, token: str, timeout: float = 30.0) -> None:
        self.port, self.token, self.timeout = port, token, timeout

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        try:
            headers = {"X-Auth-Token": self.token, "Accept": "application/json"}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        try:
            out = json.loads(raw) if raw else None
        except ValueError:
            out = raw.decode("utf-8", "replace")
        return resp.status, out

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """The answer's body; anything but a 2xx is a BenchError."""
        status, out = self.request(method, path, body)
        if not 200 <= status < 300:
            raise BenchError(f"{method} {path}: HTTP {status}: {out!r:.600}")
        return out

    def wait_ready(self, procs: Sequence[Proc], timeout: float) -> None:
        """Until GET / answers; fails early when one of ``procs`` exits."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for p in procs:
                if not p.alive():
                    raise BenchError(
                        f"{p.argv[0]} exited (rc={p.p.returncode}) before the API answered:\n"
                        + p.tail()
                    )
            try:
                self.request("GET", "/")
                return
            except (OSError, http.client.HTTPException):
                time.sleep(0.1)
        raise BenchError(
            f"the API did not answer within {timeout:.0f} s:\n" + "\n".join(p.tail() for p in procs)
        )
