"""A real single-node Ceph cluster for the storage-fencing tests, and "hosts" that write to it.

Debian's ceph 16.2 daemons in a temporary directory: one mon, one mgr and one OSD on
memstore, pool size 1, cephx on (docs/configuration.md's least-privilege user is created
for the tests: :meth:`CephCluster.fence_user`). HEALTH_OK in about 10 s.

Ceph sees every loopback client as 127.0.0.1, so a host cannot be fenced by IP there: the
cluster listens on a bridge (``10.201.0.1``) and each :class:`RBDHost` is a network
namespace of its own on that bridge (a veth, ``10.201.0.2``, ``.3``...), where a writer
(tests/fakes/rbd_writer.py, under Debian's /usr/bin/python3: the python3-rados bindings
import nowhere else) writes to its own RBD image in a loop and reports each write on stdout.

    with CephCluster(tmp) as cluster, cluster.host("10.201.0.2") as a:
        a.wait_writes(3)
        cluster.ceph("osd", "blocklist", "add", a.address)
        a.wait_failed()     # errno 108: ESHUTDOWN
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.support.ports import free_port

DAEMONS = ("/usr/bin/ceph-mon", "/usr/bin/ceph-mgr", "/usr/bin/ceph-osd", "/usr/bin/ceph")
PYTHON = "/usr/bin/python3"
WRITER = str(Path(__file__).with_name("rbd_writer.py"))
POOL = "rbd"
# The bridge's network: the cluster on .1, the hosts from .2 (one cluster at a time on a
# machine: tests/ceph runs on one pytest-xdist worker).
NETWORK = "10.201.0"
# The cephx user the fencing entry runs as, and its caps (docs/configuration.md).
FENCE_USER = "client.masakari-fence"
FENCE_CAPS = ("mon", 'allow command "osd blocklist", allow command "osd blocklist ls"')


def available() -> str | None:
    """Why the cluster cannot start here (a missing program, no right to make network
    namespaces), or None."""
    if os.geteuid() != 0:
        return "the Ceph hosts' network namespaces need root"
    for path in (*DAEMONS, PYTHON):
        if not os.access(path, os.X_OK):
            return f"{path} missing (Debian packages ceph-mon ceph-mgr ceph-osd ceph-common)"
    probe = subprocess.run([PYTHON, "-c", "import rados, rbd"], capture_output=True, check=False)
    if probe.returncode:
        return "python3-rados/python3-rbd missing for /usr/bin/python3"
    return None


def _run(argv: Sequence[str], timeout: float = 60, **kwargs: Any) -> str:
    done = subprocess.run(
        list(argv), capture_output=True, text=True, timeout=timeout, check=False, **kwargs
    )
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()}")
    return done.stdout


class CephCluster:
    """Mon, mgr and OSD under ``root`` (their logs too), on ``NETWORK.1`` and a free port."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tag = f"mk{os.getpid() % 100000}"
        self.bridge = f"{self.tag}br"
        self.address = f"{NETWORK}.1"
        self.port = free_port()
        self.conf = str(root / "ceph.conf")
        self.admin_keyring = str(root / "admin.keyring")
        self.procs: list[subprocess.Popen[bytes]] = []
        self.hosts: list[RBDHost] = []

    # --- start and stop ----------------------------------------------------------------------

    def __enter__(self) -> CephCluster:
        try:
            self._network()
            self._bootstrap()
            self._wait_healthy(60)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for host in self.hosts:
            host.close()
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in reversed(self.procs):
            try:
                proc.wait(3)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True, check=False)

    def _network(self) -> None:
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True, check=False)
        _run(["ip", "link", "add", self.bridge, "type", "bridge"])
        _run(["ip", "addr", "add", f"{self.address}/24", "dev", self.bridge])
        _run(["ip", "link", "set", self.bridge, "up"])

    def _bootstrap(self) -> None:
        root = self.root
        for sub in ("mon", "mgr", "osd", "run"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        fsid = str(uuid.uuid4())
        (root / "ceph.conf").write_text(
            "[global]\n"
            f"fsid = {fsid}\n"
            f"mon host = v2:{self.address}:{self.port}\n"
            f"public addr = {self.address}\n"
            f"keyring = {self.admin_keyring}\n"
            f"run dir = {root}/run\n"
            f"log file = {root}/$name.log\n"
            "mon allow pool size one = true\n"
            "mon warn on pool no redundancy = false\n"
            # A shared test machine's disk: not this cluster's health.
            "mon data avail warn = 1\n"
            "mon warn on insecure global id reclaim allowed = false\n"
            "osd pool default size = 1\n"
            "osd pool default min size = 1\n"
            "osd pool default pg autoscale mode = off\n"
            "osd crush chooseleaf type = 0\n"
            "ms bind msgr1 = false\n"
            f"mon data = {root}/mon\n"
            f"mgr data = {root}/mgr\n"
            f"osd data = {root}/osd\n"
            "osd objectstore = memstore\n"
            "memstore device bytes = 536870912\n"
            "mgr initial modules = \n"
            "[client]\n"
            "rbd cache = false\n"
            # Clients run side by side (the engine's ceph commands, the hosts' writers).
            "admin socket = \n"
        )
        mon_keyring = str(root / "mon.keyring")
        _run(
            ["ceph-authtool", "--create-keyring", mon_keyring, "--gen-key", "-n", "mon."]
            + ["--cap", "mon", "allow *"]
        )
        _run(
            ["ceph-authtool", "--create-keyring", self.admin_keyring, "--gen-key"]
            + ["-n", "client.admin", "--cap", "mon", "allow *", "--cap", "osd", "allow *"]
            + ["--cap", "mgr", "allow *"]
        )
        _run(["ceph-authtool", mon_keyring, "--import-keyring", self.admin_keyring])
        monmap = str(root / "monmap")
        _run(
            ["monmaptool", "--create", "--fsid", fsid, monmap]
            + ["--addv", "a", f"[v2:{self.address}:{self.port}]"]
        )
        conf = ["-c", self.conf]
        _run(["ceph-mon", *conf, "--mkfs", "-i", "a", "--monmap", monmap, "--keyring", mon_keyring])
        self._daemon(["ceph-mon", *conf, "-f", "-i", "a"])
        _run(
            ["ceph", *conf, "auth", "get-or-create", "mgr.x", "mon", "allow profile mgr"]
            + ["osd", "allow *", "-o", str(root / "mgr" / "keyring")]
        )
        self._daemon(["ceph-mgr", *conf, "-f", "-i", "x", "--keyring", str(root / "mgr/keyring")])
        osd_uuid = str(uuid.uuid4())
        osd_id = self.ceph("osd", "new", osd_uuid).strip()
        osd_keyring = str(root / "osd" / "keyring")
        _run(
            ["ceph", *conf, "auth", "get-or-create", f"osd.{osd_id}", "mon", "allow profile osd"]
            + ["mgr", "allow profile osd", "osd", "allow *", "-o", osd_keyring]
        )
        _run(
            ["ceph-osd", *conf, "-i", osd_id, "--mkfs", "--osd-uuid", osd_uuid]
            + ["--keyring", osd_keyring]
        )
        self._daemon(["ceph-osd", *conf, "-f", "-i", osd_id, "--keyring", osd_keyring])
        self.ceph("osd", "pool", "create", POOL, "8", "8")
        self.ceph("osd", "pool", "application", "enable", POOL, "rbd")

    def _daemon(self, argv: list[str]) -> None:
        log = open(self.root / f"{Path(argv[0]).name}.out", "wb")  # noqa: SIM115 - the child's
        with log:
            self.procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT))

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        status: dict[str, Any] = {}
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"{proc.args[0]} exited {proc.returncode} ({self.root})")
            status = json.loads(self.ceph("status", "--format", "json"))
            pgs = status["pgmap"]
            states = {s["state_name"]: s["count"] for s in pgs.get("pgs_by_state", [])}
            healthy = status["health"]["status"] == "HEALTH_OK"
            if healthy and pgs["num_pgs"] and states.get("active+clean") == pgs["num_pgs"]:
                return
            time.sleep(0.3)
        raise RuntimeError(f"Ceph not healthy within {timeout:g} s: {status.get('health')}")

    # --- use --------------------------------------------------------------------------------

    def ceph(self, *args: str, timeout: float = 30) -> str:
        """A ``ceph`` command as client.admin; its stdout."""
        return _run(["ceph", "-c", self.conf, "--connect-timeout", "10", *args], timeout)

    def blocklist(self) -> list[str]:
        """The OSD map's whole-IP blocklist entries, as ``osd dump`` shows them
        (``10.201.0.2:0/0``). librbd adds entries of its own, of one client (``ip:0/nonce``),
        when a writer breaks the lock of a dead one: not these."""
        found = json.loads(self.ceph("osd", "dump", "--format", "json"))["blocklist"]
        return sorted(addr for addr in found if addr.endswith(":0/0"))

    def fence_user(self) -> str:
        """The keyring of :data:`FENCE_USER` (created once), with :data:`FENCE_CAPS` only."""
        path = self.root / "fence.keyring"
        if not path.exists():
            self.ceph("auth", "get-or-create", FENCE_USER, *FENCE_CAPS, "-o", str(path))
        return str(path)

    def entry(self, address: str, **keys: Any) -> dict[str, Any]:
        """A fencing-file ``ceph`` entry for the host at ``address``, as :data:`FENCE_USER`."""
        return {
            "driver": "ceph",
            "address": address,
            "conf": self.conf,
            "user": FENCE_USER.removeprefix("client."),
            "keyring": self.fence_user(),
            "timeout": 10,
            **keys,
        }

    def unreachable_conf(self) -> str:
        """A ceph.conf of this cluster whose monitor is at a port nothing listens on."""
        path = self.root / "unreachable.conf"
        text = Path(self.conf).read_text()
        path.write_text(text.replace(f":{self.port}", f":{free_port()}"))
        return str(path)

    def host(self, address: str) -> RBDHost:
        """A started :class:`RBDHost` at ``address`` (on :data:`NETWORK`), closed with the
        cluster."""
        host = RBDHost(self, address)
        self.hosts.append(host)
        host.start()
        return host


class RBDHost:
    """A "compute host": a network namespace at ``address`` whose client writes to its own
    RBD image in a loop. ``writes`` counts the acknowledged writes; ``error`` is the
    exception that ended the loop (``ConnectionShutdown`` once fenced), None while it runs."""

    def __init__(self, cluster: CephCluster, address: str) -> None:
        self.cluster = cluster
        self.address = address
        self.index = int(address.rsplit(".", 1)[1])
        self.netns = f"{cluster.tag}h{self.index}"
        # An image of its own: a writer of an earlier host at this address may still hold the
        # lock of its image (librbd waits for it to time out before it breaks it).
        self.image = f"host-{self.index}-{uuid.uuid4().hex[:8]}"
        self.writes = 0
        self.error: str | None = None
        self.errno: int | None = None
        self.failed_at: float | None = None
        self.proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        """Its namespace on the cluster's bridge, its image, and its writer."""
        ns, veth = self.netns, f"{self.netns}v"
        subprocess.run(["ip", "link", "del", veth], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        _run(["ip", "netns", "add", ns])
        _run(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns])
        _run(["ip", "link", "set", veth, "master", self.cluster.bridge, "up"])
        for cmd in (
            ["ip", "addr", "add", f"{self.address}/24", "dev", "eth0"],
            ["ip", "link", "set", "eth0", "up"],
            ["ip", "link", "set", "lo", "up"],
        ):
            _run(["ip", "netns", "exec", ns, *cmd])
        conf = ["-c", self.cluster.conf]
        if self.image not in _run(["rbd", *conf, "ls", POOL]).split():
            _run(["rbd", *conf, "create", f"{POOL}/{self.image}", "--size", "16"])
        self.restart()

    def restart(self) -> None:
        """A new writer (a new Ceph client) in place of the running or failed one."""
        self._stop()
        self.error = self.errno = self.failed_at = None
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", self.netns, PYTHON, WRITER, self.cluster.conf, POOL]
            + [self.image],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, name=f"rbd-{self.image}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            if "wrote" in event:
                self.writes = event["wrote"]
            elif "error" in event:
                self.error, self.errno = event["error"], event.get("errno")
                self.failed_at = time.time()

    def wait_writes(self, count: int, timeout: float = 30) -> int:
        """Wait until ``count`` more writes were acknowledged; the total."""
        target = self.writes + count
        deadline = time.monotonic() + timeout
        while self.writes < target:
            if self.error or time.monotonic() > deadline:
                raise AssertionError(f"{self.image}: {self.writes} < {target} ({self.error})")
            time.sleep(0.05)
        return self.writes

    def wait_failed(self, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while self.error is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.image} still writing ({self.writes} writes)")
            time.sleep(0.05)
        return self.error

    def close(self) -> None:
        self._stop()
        subprocess.run(["ip", "link", "del", f"{self.netns}v"], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", self.netns], capture_output=True, check=False)

    def _stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._reader is not None:
            self._reader.join(5)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
