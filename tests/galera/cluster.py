"""A throwaway 3-node MariaDB Galera cluster on loopback, for the tests that need one.

Each node is a ``mariadbd`` of its own: a defaults file (the machine's configuration is never
read), a data directory, socket, pid file and four free ports (client, group communication,
IST, SST). The machine's own MariaDB on port 3306 is never touched: the cluster is stopped by
the pids this module started, nothing else.

    cluster = GaleraCluster(size=3)
    cluster.start()                       # ~20 s cold
    url = cluster.url(1, "masakari")      # mysql+pymysql://root@127.0.0.1:PORT/masakari
    cluster.stop_node(1); cluster.start_node(1)   # the restart rejoins by IST
    cluster.close()
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pymysql

from tests.support.ports import free_ports

PROVIDER = "/usr/lib/galera/libgalera_smm.so"
MARIADBD = "/usr/sbin/mariadbd"
# mariadbd as root cannot serve an rsync snapshot (the joiner's rsync daemon writes as
# nobody), so when the tests run as root the nodes run as this user.
SERVER_USER = "mysql"

START_TIMEOUT = 90.0
STOP_TIMEOUT = 60.0


def unavailable() -> str | None:
    """None when this machine can run a cluster, else what is missing."""
    missing = [path for path in (PROVIDER, MARIADBD) if not os.access(path, os.R_OK)]
    for tool in ("mariadb-install-db", "rsync", "wsrep_sst_rsync"):
        if shutil.which(tool) is None:
            missing.append(tool)
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            missing.append(f"user {SERVER_USER}")
    if missing:
        return "Galera cluster cannot run here, missing: " + ", ".join(missing)
    return None


class ClusterError(RuntimeError):
    pass


class Node:
    def __init__(self, cluster: GaleraCluster, index: int, ports: list[int]) -> None:
        self.cluster = cluster
        self.index = index
        self.name = f"node{index}"
        self.port, self.group_port, self.ist_port, self.sst_port = ports
        self.dir = os.path.join(cluster.base_dir, self.name)
        self.datadir = os.path.join(self.dir, "data")
        self.socket = os.path.join(self.dir, "mariadbd.sock")
        self.pid_file = os.path.join(self.dir, "mariadbd.pid")
        self.error_log = os.path.join(self.dir, "error.log")
        self.defaults_file = os.path.join(self.dir, "my.cnf")
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def write_defaults(self, cluster_address: str) -> None:
        options = {
            "datadir": self.datadir,
            "socket": self.socket,
            "pid-file": self.pid_file,
            "log-error": self.error_log,
            "port": self.port,
            "bind-address": "127.0.0.1",
            "skip-name-resolve": "ON",
            "performance_schema": "OFF",
            "max_connections": 500,
            # What Galera requires.
            "binlog_format": "ROW",
            "default_storage_engine": "InnoDB",
            "innodb_autoinc_lock_mode": 2,
            # Three nodes on a small machine; durability comes from the other nodes.
            "innodb_buffer_pool_size": "64M",
            "innodb_log_file_size": "16M",
            "innodb_flush_log_at_trx_commit": 2,
            "wsrep_on": "ON",
            "wsrep_provider": PROVIDER,
            "wsrep_cluster_name": self.cluster.name,
            "wsrep_cluster_address": cluster_address,
            "wsrep_node_name": self.name,
            "wsrep_node_address": f"127.0.0.1:{self.group_port}",
            "wsrep_provider_options": (
                f'"base_port={self.group_port};'
                f"gmcast.listen_addr=tcp://127.0.0.1:{self.group_port};"
                f"ist.recv_addr=127.0.0.1:{self.ist_port};"
                'gcache.size=64M"'
            ),
            "wsrep_sst_method": "rsync",
            "wsrep_sst_receive_address": f"127.0.0.1:{self.sst_port}",
            "wsrep_slave_threads": 2,
            "wsrep_log_conflicts": "ON",
        }
        if os.geteuid() == 0:
            options["user"] = SERVER_USER
        with open(self.defaults_file, "w") as f:
            f.write("[mysqld]\n")
            for key, value in options.items():
                f.write(f"{key}={value}\n")

    def log_tail(self, lines: int = 40) -> str:
        try:
            with open(self.error_log, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no error log)"

    def connect(self, timeout: float = 5.0, **kwargs: Any) -> pymysql.Connection[Any]:
        return pymysql.connect(
            host="127.0.0.1",
            port=self.port,
            user="root",
            connect_timeout=timeout,
            read_timeout=timeout * 6,
            write_timeout=timeout * 6,
            autocommit=True,
            **kwargs,
        )

    def status(self) -> dict[str, str]:
        """wsrep_* status variables; empty when the node does not answer."""
        try:
            conn = self.connect(timeout=2)
        except pymysql.Error:
            return {}
        try:
            with conn.cursor() as cur:
                cur.execute("SHOW GLOBAL STATUS LIKE 'wsrep_%'")
                return {str(k): str(v) for k, v in cur.fetchall()}
        except pymysql.Error:
            return {}
        finally:
            conn.close()


class GaleraCluster:
    def __init__(self, size: int = 3, base_dir: str | None = None) -> None:
        self.size = size
        self.name = f"masakari-test-{uuid.uuid4().hex[:8]}"
        self._own_dir = base_dir is None
        self.base_dir = base_dir or tempfile.mkdtemp(prefix="masakari-galera-")
        # The server user must reach its data directory under the temporary one.
        os.chmod(self.base_dir, 0o755)
        ports = free_ports(4 * size)
        self.nodes = [Node(self, i, ports[4 * i : 4 * i + 4]) for i in range(size)]
        self.cluster_address = "gcomm://" + ",".join(
            f"127.0.0.1:{n.group_port}" for n in self.nodes
        )

    # --- life cycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Bootstrap node 0, then join the others one at a time; return once all are synced."""
        try:
            for node in self.nodes:
                os.makedirs(node.datadir)
                node.write_defaults(self.cluster_address)
            self._chown(self.base_dir)
            self._install(self.nodes[0])
            self._launch(self.nodes[0], bootstrap=True)
            self._wait_synced(self.nodes[0], cluster_size=1)
            for count, node in enumerate(self.nodes[1:], start=2):
                self._launch(node, bootstrap=False)
                self._wait_synced(node, cluster_size=count)
        except BaseException:
            self.close()
            raise

    def stop_node(self, index: int) -> None:
        """A clean shutdown (SIGTERM): the node leaves the group and keeps its state."""
        node = self.nodes[index]
        if node.proc is None:
            return
        self._terminate(node)

    def start_node(self, index: int, timeout: float = START_TIMEOUT) -> None:
        """Start a stopped node again; it rejoins (by IST when the others' gcache allows)."""
        node = self.nodes[index]
        if node.running:
            return
        self._launch(node, bootstrap=False)
        self._wait_synced(node, cluster_size=None, timeout=timeout)

    def close(self) -> None:
        """Stop every node this object started, then remove the data."""
        for node in reversed(self.nodes):
            if node.proc is not None:
                self._terminate(node)
        if self._own_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> GaleraCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- use -----------------------------------------------------------------------------

    def url(self, index: int, database: str = "") -> str:
        return f"mysql+pymysql://root@127.0.0.1:{self.nodes[index].port}/{database}"

    def urls(self, database: str) -> list[str]:
        return [self.url(i, database) for i in range(self.size)]

    def status(self, index: int) -> dict[str, str]:
        return self.nodes[index].status()

    def wait_size(self, size: int, timeout: float = START_TIMEOUT) -> None:
        """Every running node synced in a primary component of ``size`` members."""
        deadline = time.monotonic() + timeout
        while True:
            states = [n.status() for n in self.nodes if n.running]
            if len(states) == size and all(self._synced(s, size) for s in states):
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"cluster not at size {size}: {states}")
            time.sleep(0.2)

    @contextlib.contextmanager
    def database(self) -> Iterator[str]:
        """A new, empty database (created through node 0, replicated); dropped afterwards."""
        name = f"masakari_galera_{uuid.uuid4().hex[:12]}"
        self.execute(0, f"CREATE DATABASE {name} CHARACTER SET utf8mb4")
        try:
            yield name
        finally:
            running = next(i for i, n in enumerate(self.nodes) if n.running)
            self.execute(running, f"DROP DATABASE IF EXISTS {name}")

    def execute(self, index: int, sql: str) -> list[tuple[Any, ...]]:
        conn = self.nodes[index].connect()
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
                return list(cur.fetchall())
        finally:
            conn.close()

    # --- internals -----------------------------------------------------------------------

    @staticmethod
    def _synced(status: dict[str, str], size: int | None) -> bool:
        return (
            status.get("wsrep_ready") == "ON"
            and status.get("wsrep_local_state_comment") == "Synced"
            and status.get("wsrep_cluster_status") == "Primary"
            and (size is None or status.get("wsrep_cluster_size") == str(size))
        )

    def _chown(self, path: str) -> None:
        if os.geteuid() != 0:
            return
        user = pwd.getpwnam(SERVER_USER)
        for root, dirs, files in os.walk(path):
            for name in [root, *(os.path.join(root, d) for d in dirs)]:
                os.chown(name, user.pw_uid, user.pw_gid)
            for name in files:
                os.chown(os.path.join(root, name), user.pw_uid, user.pw_gid)

    def _install(self, node: Node) -> None:
        """System tables for the first node; the others receive them in their snapshot."""
        command = [
            "mariadb-install-db",
            f"--defaults-file={node.defaults_file}",
            "--skip-test-db",
            # root@127.0.0.1 without a password: the tests reach every node over TCP.
            "--auth-root-authentication-method=normal",
        ]
        if os.geteuid() == 0:
            command.append(f"--user={SERVER_USER}")
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise ClusterError(f"mariadb-install-db failed:\n{done.stdout}\n{done.stderr}")

    def _launch(self, node: Node, bootstrap: bool) -> None:
        command = [MARIADBD, f"--defaults-file={node.defaults_file}"]
        if bootstrap:
            command.append("--wsrep-new-cluster")
        with open(os.path.join(node.dir, "stdout.log"), "ab") as out:
            # A session of its own: the SST helpers it forks are stopped with it.
            node.proc = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def _wait_synced(
        self, node: Node, cluster_size: int | None, timeout: float = START_TIMEOUT
    ) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert node.proc is not None
            if node.proc.poll() is not None:
                raise ClusterError(
                    f"{node.name} exited with {node.proc.returncode}:\n{node.log_tail()}"
                )
            status = node.status()
            if self._synced(status, cluster_size):
                if cluster_size is None:
                    # A rejoining node counts itself: every running node must see all.
                    self.wait_size(sum(1 for n in self.nodes if n.running), timeout=timeout)
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"{node.name} not synced: {status}\n{node.log_tail()}")
            time.sleep(0.2)

    def _terminate(self, node: Node) -> None:
        proc = node.proc
        assert proc is not None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=STOP_TIMEOUT)
        # Helpers (an SST's rsync daemon) left in the node's own session.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        node.proc = None
