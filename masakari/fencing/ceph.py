"""The ``ceph`` entry: storage fencing, by cutting a host off its RBD disks.

``ceph osd blocklist add`` of each of the host's client addresses on the Ceph public network
(the whole IP: every librados client there, qemu's and nova-compute's alike), then ``ceph
osd blocklist ls``: the host is cut off once every address is in the OSD map, whose new epoch
every OSD enforces before it serves the next operation: a blocklisted client's writes fail
(ESHUTDOWN) whatever its power state. That confirmation is the proof, as "reads Off" is a
power driver's. ``blocklist rm`` lifts it (host return, or an operator by hand).

The ``ceph`` command (Debian's ceph-common) runs in a child process with the entry's
timeout (and ``--connect-timeout``: an unreachable monitor is an error, not a hang), as the
entry's cephx user, whose key stays in its keyring file: no secret on any command line. That
user needs no more than ``mon 'allow command "osd blocklist", allow command "osd blocklist
ls"'`` (docs/configuration.md).
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
from collections.abc import Mapping
from typing import Any

from masakari.fencing import _process, base, kdump

__all__ = ["KEYS", "CephBlocklist", "DEFAULT_EXPIRE", "entity", "options", "probe"]

# Debian's ceph-common, then $PATH.
CEPH = "/usr/bin/ceph"
# Five years, as ceph-csi's NetworkFence: a host is cut off until it is back and lifted, not
# until an expiry nobody watches (Ceph's own default is one hour).
DEFAULT_EXPIRE = 157784630.0
_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C", "LC_ALL": "C"}
_PATH = {"type": "string", "pattern": r"^/\S*$", "description": "must be an absolute path"}

# A ceph entry's own keys in the fencing file (besides driver, name, address, timeout).
KEYS: dict[str, Any] = {
    "addresses": {
        "type": "array",
        "items": {
            "type": "string",
            "minLength": 1,
            "maxLength": 255,
            "pattern": r"^[^,\s]+$",
            "description": "must be one address (an IP or a name; no comma, no space)",
        },
        "minItems": 1,
    },
    "conf": _PATH,
    "user": {
        "type": "string",
        "pattern": r"^[A-Za-z0-9_.-]+$",
        "description": "must be a cephx user's id (masakari-fence for client.masakari-fence)",
    },
    "keyring": _PATH,
    "expire": {"type": "number", "exclusiveMinimum": 0},
    "after_power": {"type": "boolean"},
}


def options(raw: Mapping[str, Any]) -> dict[str, str]:
    """A ceph entry's options as :class:`~masakari.fencing.base.DriverSpec` keeps them."""
    found = {key: str(raw[key]) for key in ("conf", "user", "keyring", "expire") if key in raw}
    if "addresses" in raw:
        found["addresses"] = ",".join(raw["addresses"])
    if raw.get("after_power"):
        found["after_power"] = "1"
    return found


def entity(ip: str) -> str:
    """The OSD map's form of a whole-IP blocklist entry (``10.0.0.2:0/0``, ``[fd00::2]:0/0``)."""
    return f"[{ip}]:0/0" if ":" in ip else f"{ip}:0/0"


class CephBlocklist:
    """The blocklist of one ``ceph`` entry's addresses (``spec.address`` and the
    comma-separated ``spec.options["addresses"]``; names are resolved at each call)."""

    def __init__(self, spec: base.DriverSpec) -> None:
        self.spec = spec
        path = CEPH if os.access(CEPH, os.X_OK) else shutil.which("ceph")
        if path is None:
            raise base.FenceError(
                "the ceph command is missing (Debian package ceph-common)", spec.describe()
            )
        self.path = path
        self.addresses = [spec.address] if spec.address else []
        self.addresses += [a for a in spec.options.get("addresses", "").split(",") if a]
        if not self.addresses:
            raise base.FenceError("no address to blocklist", spec.describe())
        expire = float(spec.options.get("expire", DEFAULT_EXPIRE))
        # Seconds as Ceph reads them back ("157784630", not "1.57785e+08").
        self.expire = str(int(expire)) if expire.is_integer() else str(expire)

    def ips(self) -> list[str]:
        """The addresses as IPs, in order, each once (a name resolves to all of its)."""
        found: list[str] = []
        for address in self.addresses:
            try:
                ipaddress.ip_address(address)
                resolved = {address}
            except ValueError:
                try:
                    resolved = kdump.resolve(address)
                except (OSError, UnicodeError) as exc:
                    why = getattr(exc, "strerror", None) or type(exc).__name__
                    raise base.FenceError(
                        f"address {address} does not resolve: {why}", self.spec.describe()
                    ) from None
            found += sorted(ip for ip in resolved if ip not in found)
        return found

    def add(self, ips: list[str]) -> None:
        """``ceph osd blocklist add`` of each IP (idempotent: an entry already there is
        renewed)."""
        for ip in ips:
            self._ceph("osd", "blocklist", "add", ip, self.expire)

    def listed(self) -> set[str]:
        """The OSD map's blocklist now (``10.0.0.2:0/0``, ``10.0.0.3:6801/1234``...)."""
        out = self._ceph("osd", "blocklist", "ls", "--format", "json")
        # Pacific prints the blocklist, then the range blocklist: two JSON arrays.
        found: set[str] = set()
        decoder, at = json.JSONDecoder(), 0
        out = out.strip()
        try:
            while at < len(out):
                entries, at = decoder.raw_decode(out, at)
                found |= {e["addr"] for e in entries if isinstance(e, dict) and "addr" in e}
                while at < len(out) and out[at].isspace():
                    at += 1
        except (ValueError, TypeError):
            raise base.FenceError(
                "ceph osd blocklist ls: not the JSON expected", self.spec.describe()
            ) from None
        return found

    def missing(self, ips: list[str]) -> list[str]:
        """Those of ``ips`` the OSD map does not blocklist (whole-IP entries)."""
        listed = self.listed()
        return [ip for ip in ips if entity(ip) not in listed]

    def remove(self, ips: list[str]) -> list[str]:
        """``ceph osd blocklist rm`` of those of ``ips`` listed now; the ones removed."""
        listed = self.listed()
        removed = [ip for ip in ips if entity(ip) in listed]
        for ip in removed:
            self._ceph("osd", "blocklist", "rm", ip)
        return removed

    def _ceph(self, *args: str) -> str:
        spec = self.spec
        # Said plainly (the ceph command would only say "permission denied"); checked here,
        # where {host} is filled in, not when the entry is built.
        keyring = spec.options.get("keyring")
        if keyring and not os.access(keyring, os.R_OK):
            raise base.FenceError(f"keyring {keyring} cannot be read", spec.describe())
        # Its own time-out first: "timed out" says the monitors did not answer.
        connect = max(1, int(spec.timeout * 0.8))
        argv = [self.path, "--connect-timeout", str(connect)]
        for flag, key in (("--conf", "conf"), ("--id", "user"), ("--keyring", "keyring")):
            if spec.options.get(key):
                argv += [flag, spec.options[key]]
        command = " ".join(args[:3])
        try:
            done = _process.run([*argv, *args], "", timeout=spec.timeout, env=_ENV)
        except _process.Expired:
            raise base.Unreachable(
                f"{command}: no answer within {spec.timeout:g} s (killed)", spec.describe()
            ) from None
        except OSError as exc:
            why = f"cannot run {argv[0]}: {exc.strerror}"
            raise base.FenceError(why, spec.describe()) from None
        if done.returncode == 0:
            return done.stdout
        reason = _reason(done.stderr)
        message = f"{command} failed (exit {done.returncode}){': ' + reason if reason else ''}"
        if done.returncode == 13 or "EACCES" in reason or "Permission denied" in reason:
            raise base.Refused(message, spec.describe())
        if "timed out" in reason or "TimeoutError" in reason or done.returncode == 110:
            raise base.Unreachable(message, spec.describe())
        raise base.FenceError(message, spec.describe())


def _reason(stderr: str) -> str:
    """The ceph command's last line worth showing (it prints no secret: keys stay in the
    keyring file)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def probe(spec: base.DriverSpec) -> None:
    """The readiness doctor's read-only test of a ceph entry (masakari.fencing.drivers.check):
    its addresses resolve and its user can read the blocklist (one ``osd blocklist ls``;
    nothing is changed). Raises what a fence through it would."""
    blocklist = CephBlocklist(spec)
    blocklist.ips()
    blocklist.listed()
