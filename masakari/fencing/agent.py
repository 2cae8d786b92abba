"""The ``agent`` driver: any ClusterLabs fence agent (``fence_ipmilan``, ``fence_redfish``,
``fence_*``), called the way pacemaker calls it.

The agent reads its arguments as ``key=value`` lines on stdin (never on its command line,
where any user could read a password): ``action=off|status|on``, ``ip``, ``ipport``,
``username`` and ``password`` from the entry's address, port and credentials, then the
entry's ``args``. Exit codes as the agents define them: 0 done (``status``: on), 2 off
(``status`` only), anything else a failure, whose reason is the agent's last error line.
An agent's exit code does not say *why* it failed (a wrong password and a dead BMC both exit
1), so a failure is a :class:`~masakari.fencing.base.FenceError`, and
:class:`~masakari.fencing.base.Unreachable` only when the agent says "Connection timed out"
or is still running at the entry's timeout: then its whole process group is killed.

The agents wait for the power state themselves after ``off`` and ``on`` (for their
``power_timeout``, 20 s by default): unless the entry's args set it, masakari passes half
the entry's timeout, so that a host that stays on is reported as a failure before the
agent is killed.

The agents run on the system's Python (Debian's ``/usr/bin/python3``, their shebang), in a
clean environment: the engine's virtualenv and locale do not leak into them.

``fence_ipmilan`` (and its copies ``fence_idrac``, ``fence_ilo3``... :data:`IPMITOOL_AGENTS`)
hands the password it reads to ipmitool as ``-P PASSWORD``, on a command line that any local
user can read while it runs. So such an agent is given no password at all: ipmitool gets it
in its environment (``IPMI_PASSWORD``, readable by the engine's user alone) through a
wrapper that fence_ipmilan runs as its ``ipmitool_path``, which drops fence_ipmilan's empty
``-P ''`` and calls the real ipmitool with ``-E``.
"""

from __future__ import annotations

import atexit
import math
import os
import shutil
import tempfile
import threading

from masakari.fencing import _process, base

# Where distributions install the agents (Debian, RHEL: /usr/sbin), before $PATH.
AGENT_DIRS = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")
_ENV = {"PATH": ":".join(AGENT_DIRS), "LANG": "C", "LC_ALL": "C"}
_EXIT_OFF = 2
_TIMED_OUT = "Connection timed out"

# fence_ipmilan and the names fence-agents installs it under (copies on Debian, symlinks on
# RHEL): each runs ipmitool with the password among its arguments.
IPMITOOL_AGENTS = frozenset(
    {
        "fence_ipmilan",
        "fence_ipmilanplus",
        "fence_idrac",
        "fence_ilo3",
        "fence_ilo4",
        "fence_ilo5",
        "fence_imm",
    }
)
# fence_ipmilan's default ipmitool.
DEFAULT_IPMITOOL = "/usr/bin/ipmitool"
# Arguments that would put the password back where any user can read it, or lose it: sudo
# resets the environment; a password script's output becomes ipmitool's -P argument.
_IPMITOOL_REFUSED = {
    "use_sudo": "sudo would drop the password masakari gives ipmitool in its environment",
    "sudo": "sudo would drop the password masakari gives ipmitool in its environment",
    "password_script": "fence_ipmilan puts its output on ipmitool's command line; give "
    "password: instead",
    "passwd_script": "fence_ipmilan puts its output on ipmitool's command line; give "
    "password: instead",
}
# Run by fence_ipmilan as its ipmitool: fence_ipmilan, given no password, passes -P ''; the
# real ipmitool ($MASAKARI_IPMITOOL) reads the password from IPMI_PASSWORD instead (-E).
_IPMITOOL_WRAPPER = """#!/bin/sh
# masakari: ipmitool for fence_ipmilan, the password in IPMI_PASSWORD (-E), never in -P.
first=1
skip=
for arg do
  if [ -n "$first" ]; then set --; first=; fi
  if [ -n "$skip" ]; then skip=; continue; fi
  if [ "$arg" = "-P" ]; then skip=1; continue; fi
  set -- "$@" "$arg"
done
exec "${MASAKARI_IPMITOOL:?}" -E "$@"
"""
_wrapper_lock = threading.Lock()
_wrapper_path: str | None = None


class AgentDriver:
    """:class:`~masakari.fencing.base.PowerDriver` through the fence agent
    ``spec.options["agent"]`` (a name looked up in the system directories, or a path)."""

    def __init__(self, spec: base.DriverSpec) -> None:
        self.spec = spec
        self.path = find_agent(spec.options.get("agent", ""))
        if self.path is None:
            raise base.FenceError(
                f"fence agent {spec.options.get('agent')!r} not found "
                f"(looked in {', '.join(AGENT_DIRS)} and $PATH)",
                spec.describe(),
            )
        # The real ipmitool, when the password goes to it through the environment.
        self.ipmitool: str | None = None
        if spec.password and runs_ipmitool(self.path):
            for key, why in _IPMITOOL_REFUSED.items():
                if key in spec.options:
                    raise base.FenceError(f"args: {key}: {why}", spec.describe())
            self.ipmitool = spec.options.get("ipmitool_path") or DEFAULT_IPMITOOL
            ipmitool_wrapper(spec)

    def power_off(self) -> None:
        self._call("off")

    def power_status(self) -> base.PowerState:
        return base.PowerState.OFF if self._call("status") == _EXIT_OFF else base.PowerState.ON

    def power_on(self) -> None:
        self._call("on")

    def stdin(self, action: str) -> str:
        """The agent's input for ``action`` (its ``key=value`` lines)."""
        spec = self.spec
        args: dict[str, str] = {"action": action}
        for key, value in (
            ("ip", spec.address),
            ("ipport", None if spec.port is None else str(spec.port)),
            ("username", spec.username),
            ("password", None if self.ipmitool else spec.password),
        ):
            if value is not None:
                args[key] = value
        args.update((k, v) for k, v in spec.options.items() if k != "agent")
        if self.ipmitool:
            args["ipmitool_path"] = ipmitool_wrapper(spec)
        if action != "status" and "power_timeout" not in args:
            args["power_timeout"] = str(max(1, math.floor(spec.timeout / 2)))
        for key, value in args.items():
            if "\n" in value or "\r" in value:
                # A line break would start another argument of the agent's.
                raise base.FenceError(f"{key}: a line break in the value", spec.describe())
        return "".join(f"{key}={value}\n" for key, value in args.items())

    def _call(self, action: str) -> int:
        spec = self.spec
        stdin = self.stdin(action)
        assert self.path is not None
        env = _ENV
        if self.ipmitool is not None and spec.password:
            env = {**_ENV, "IPMI_PASSWORD": spec.password, "MASAKARI_IPMITOOL": self.ipmitool}
        try:
            done = _process.run([self.path], stdin, timeout=spec.timeout, env=env)
        except _process.Expired:
            raise base.Unreachable(
                f"{os.path.basename(self.path)} {action} still running "
                f"after {spec.timeout:g} s (killed)",
                spec.describe(),
            ) from None
        except OSError as exc:
            raise base.FenceError(
                f"cannot run {self.path}: {exc.strerror}", spec.describe()
            ) from None
        if done.returncode == 0 or (action == "status" and done.returncode == _EXIT_OFF):
            return done.returncode
        reason = _reason(done.stderr, spec)
        message = (
            f"{os.path.basename(self.path)} {action} failed "
            f"(exit {done.returncode}){': ' + reason if reason else ''}"
        )
        # The fencing library's "connection timed out" (EC_TIMED_OUT) is the one failure
        # that says the device did not answer.
        if _TIMED_OUT in reason:
            raise base.Unreachable(message, spec.describe())
        raise base.FenceError(message, spec.describe())


def runs_ipmitool(path: str) -> bool:
    """Whether the agent at ``path`` is fence_ipmilan under one of its names."""
    names = {os.path.basename(path), os.path.basename(os.path.realpath(path))}
    return bool(names & IPMITOOL_AGENTS)


def ipmitool_wrapper(spec: base.DriverSpec) -> str:
    """The wrapper fence_ipmilan runs as its ipmitool, written once per process into a
    directory of the engine's user alone (the first that lets it be executed: /tmp may be
    mounted noexec)."""
    global _wrapper_path
    with _wrapper_lock:
        if _wrapper_path is not None and os.access(_wrapper_path, os.X_OK):
            return _wrapper_path
        tried = []
        for parent in _wrapper_dirs():
            tried.append(parent)
            try:
                directory = tempfile.mkdtemp(prefix="masakari-ipmitool-", dir=parent)
            except OSError:
                continue
            path = os.path.join(directory, "ipmitool")
            try:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(_IPMITOOL_WRAPPER)
                os.chmod(path, 0o700)
            except OSError:
                shutil.rmtree(directory, ignore_errors=True)
                continue
            if os.access(path, os.X_OK):
                atexit.register(shutil.rmtree, directory, True)
                _wrapper_path = path
                return path
            shutil.rmtree(directory, ignore_errors=True)
        raise base.FenceError(
            "cannot write the ipmitool wrapper that keeps the password off ipmitool's "
            f"command line: no directory lets it be executed (tried {', '.join(tried)})",
            spec.describe(),
        )


def _wrapper_dirs() -> list[str]:
    found = [tempfile.gettempdir(), os.environ.get("XDG_RUNTIME_DIR", ""), "/var/tmp"]
    found.append(os.path.expanduser("~"))
    return [d for d in dict.fromkeys(found) if d and os.path.isdir(d)]


def find_agent(agent: str) -> str | None:
    """The agent's executable: ``agent`` itself when it is a path, else the first of
    :data:`AGENT_DIRS` and $PATH that has it."""
    if not agent:
        return None
    if os.sep in agent:
        return agent if os.access(agent, os.X_OK) else None
    for directory in AGENT_DIRS:
        candidate = os.path.join(directory, agent)
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which(agent)


def _reason(stderr: str, spec: base.DriverSpec) -> str:
    """The agent's last error line, without any credential it might echo."""
    secrets = [spec.password] + [
        value
        for key, value in spec.options.items()
        if any(word in key for word in ("pass", "key", "secret", "token"))
    ]
    lines = [
        line.strip()
        for line in _process.redact(stderr, *secrets).splitlines()
        if "ERROR" in line or "Failed" in line
    ]
    if not lines:
        return ""
    # "2026-12-02 08:00:53,566 ERROR: Failed: ..." -> "Failed: ..."
    last = lines[-1]
    return (last.split("ERROR:", 1)[1].strip() if "ERROR:" in last else last)[:300]
