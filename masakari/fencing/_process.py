"""Run a fencing helper process with its input on stdin and a hard deadline.

A fence agent runs in a child process of its own per call: its arguments never carry a
secret (they go on stdin), and at the deadline its whole process group is killed, so nothing
it started outlives the call. (pyghmi runs in a long-lived one: :mod:`masakari.fencing._worker`.)
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence

from masakari.fencing._deadline import Expired

__all__ = ["Expired", "Finished", "redact", "run"]


@dataclasses.dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str
    duration: float


def run(
    argv: Sequence[str],
    stdin: str,
    timeout: float,
    env: Mapping[str, str] | None = None,
) -> Finished:
    """Run ``argv`` with ``stdin``; :class:`Expired` when it is not done after ``timeout``
    seconds (its process group killed and reaped first: nothing it started lives on)."""
    started = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(env) if env is not None else None,
        start_new_session=True,
        close_fds=True,
    )
    try:
        stdout, stderr = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise Expired() from None
    except BaseException:
        _kill_group(proc)
        raise
    return Finished(proc.returncode, stdout, stderr, time.monotonic() - started)


def redact(text: str, *secrets: str | None) -> str:
    """``text`` (a helper's output, for an error message) without any of ``secrets``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    # communicate() again closes the pipes and reaps the child.
    try:
        proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
