"""Host-failure recovery time against the Nova simulator, with realistic (scaled) timings.

    .venv/bin/python -m benchmarks.recovery_bench [--instances 10,50,200] [--time-scale 0.1]
        [--modes default,fast] [--reference-python /work/ref-venv/bin/python]

For each mode and instance count, one run: a Nova simulator (tests/fakes/nova.py) with a
compute host holding N instances and three spare hosts; masakari started as a deployer
starts it (``masakari-manage db sync``, ``masakari-api``, ``masakari-engine``, or the
reference's API and engine in one process through the conformance suite's
reference_server.py); a failover segment (recovery_method auto) with the host; then the
host is powered off in the simulator and a monitor's COMPUTE_HOST notification
(STOPPED / NORMAL / OFFLINE) is posted. Measured: from the POST to the first
GET /v1/notifications/{uuid} that answers ``finished`` (polled every 0.1 s).

Modes:

- ``default``: this project with its defaults: after disabling the compute service the
  engine sleeps ``wait_period_after_service_update`` so that Nova sees the service down.
- ``fast``: this project with ``[host_failure] force_down_fenced_host = true``: the service
  is forced down and evacuations start at once.
- ``reference``: masakari 22.0.0 from another virtualenv (``--reference-python``), which
  has only the default behaviour.

Lower bound: the makespan of the simulator's own evacuation durations (reproduced from the
seed) scheduled greedily on ``host_failure_recovery_threads`` slots, plus, for the default
mode and the reference, ``wait_period_after_service_update`` — the sleep the mode imposes
by design. See recovery_bound.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.recovery_bound import Bound, evacuation_delays, recovery_bound  # noqa: E402
from benchmarks.recovery_procs import (  # noqa: E402
    Api,
    BenchError,
    Proc,
    run_checked,
    write_conf,
)
from tests.fakes.nova import ADMIN_TOKEN, NovaSimulator  # noqa: E402
from tests.support.ports import free_port  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_REFERENCE_SERVER = REPO.parent / "shared" / "conformance" / "reference_server.py"
TERMINAL = ("finished", "error", "failed", "ignored")
FAILED_HOST = "compute-0"
SPARE_HOSTS = ("compute-1", "compute-2", "compute-3")
WARMUP_HOST = "compute-warm"
POLL = 0.1  # seconds between two GETs of the notification


# --- timings ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Timings:
    """A realistic cloud's timings (seconds), and the factor applied to each of them."""

    scale: float
    service_down_time: float = 60.0  # Nova [DEFAULT] service_down_time
    evacuate_min: float = 5.0  # one evacuation, uniformly drawn
    evacuate_max: float = 20.0
    wait_period_after_service_update: float = 180.0  # masakari defaults from here on
    wait_period_after_evacuation: float = 90.0
    verify_interval: float = 1.0
    wait_period_after_power_off: float = 180.0
    wait_period_after_power_on: float = 60.0

    # masakari's options are integers: each is rounded, at least 1 s.
    def _int(self, seconds: float, up: bool = False) -> int:
        scaled = seconds * self.scale
        return max(1, math.ceil(scaled - 1e-9) if up else round(scaled))

    @property
    def evacuate_delay(self) -> tuple[float, float]:
        return self.evacuate_min * self.scale, self.evacuate_max * self.scale

    def engine_options(self) -> dict[str, int]:
        verify = self._int(self.verify_interval)
        return {
            "wait_period_after_service_update": self._int(self.wait_period_after_service_update),
            # never shorter than the longest evacuation plus two polls, so rounding alone
            # cannot make a slow evacuation time out
            "wait_period_after_evacuation": max(
                self._int(self.wait_period_after_evacuation, up=True),
                math.ceil(self.evacuate_max * self.scale) + 2 * verify,
            ),
            "verify_interval": verify,
            "wait_period_after_power_off": self._int(self.wait_period_after_power_off, up=True),
            "wait_period_after_power_on": self._int(self.wait_period_after_power_on, up=True),
        }

    def check(self) -> None:
        opts = self.engine_options()
        if opts["wait_period_after_service_update"] <= self.service_down_time * self.scale:
            raise BenchError(
                "wait_period_after_service_update rounds to "
                f"{opts['wait_period_after_service_update']} s, not longer than the scaled "
                f"service_down_time ({self.service_down_time * self.scale:g} s): Nova would "
                "refuse the default mode's evacuations"
            )

    def describe(self) -> list[str]:
        lo, hi = self.evacuate_delay
        rows = [
            ("Nova service_down_time", self.service_down_time, self.service_down_time * self.scale),
            ("evacuation (min)", self.evacuate_min, lo),
            ("evacuation (max)", self.evacuate_max, hi),
        ]
        real = {
            "wait_period_after_service_update": self.wait_period_after_service_update,
            "wait_period_after_evacuation": self.wait_period_after_evacuation,
            "verify_interval": self.verify_interval,
            "wait_period_after_power_off": self.wait_period_after_power_off,
            "wait_period_after_power_on": self.wait_period_after_power_on,
        }
        rows += [(name, real[name], used) for name, used in self.engine_options().items()]
        out = [f"{'timing':36} {'realistic':>9} {'used':>7} {'x':>7}"]
        for name, realistic, used in rows:
            note = "" if math.isclose(used, realistic * self.scale) else "  (rounded, integer)"
            out.append(f"{name:36} {realistic:9g} {used:7g} {used / realistic:7.3g}{note}")
        return out


# --- one run ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Mode:
    name: str
    reference: bool = False
    force_down: bool = False

    @property
    def design_wait(self) -> bool:
        """Whether the mode sleeps wait_period_after_service_update before evacuating."""
        return not self.force_down


MODES = {
    "default": Mode("default"),
    "fast": Mode("fast", force_down=True),
    "reference": Mode("reference", reference=True),
}


@dataclasses.dataclass
class Result:
    mode: str
    instances: int
    scale: float
    status: str
    measured: float | None  # seconds from the POST to "finished" seen
    bound: float
    bound_polled: float
    design_wait: float
    first_evacuation: float | None  # seconds after the POST
    nova_done: float | None  # when the last evacuation completed in the simulator
    # the same run with realistic timings: the bounds from the unscaled delays and waits
    unscaled_bound: float = 0.0
    unscaled_bound_polled: float = 0.0
    evacuations_accepted: int = 0
    evacuations_refused: int = 0
    moved: int = 0
    error: str | None = None

    @property
    def ratio(self) -> float | None:
        return None if self.measured is None or not self.bound else self.measured / self.bound

    @property
    def unscaled_estimate(self) -> float | None:
        """What the run would take with realistic timings: the waits and Nova's work scale,
        the engine's own overhead (seconds of HTTP calls and database work) does not, and
        the polling grid is verify_interval (1 s) in both. So: the realistic bound with
        polling plus the overhead measured above this run's bound with polling."""
        if self.measured is None:
            return None
        return self.unscaled_bound_polled + (self.measured - self.bound_polled)

    @property
    def unscaled_ratio(self) -> float | None:
        est = self.unscaled_estimate
        return None if est is None or not self.unscaled_bound else est / self.unscaled_bound

    @property
    def ok(self) -> bool:
        return self.status == "finished" and self.moved == self.instances


@dataclasses.dataclass
class Setup:
    timings: Timings
    seed: int
    threads: int
    workdir: Path
    project_bin: Path
    reference_python: Path | None
    reference_server: Path
    start_timeout: float = 120.0
    verbose: bool = True
    trace: bool = False
    project_source: Path | None = None  # a source tree to run instead of the installed one

    def project_env(self) -> dict[str, str]:
        if self.project_source is None:
            return {}
        # before the editable install's finder, which comes after sys.path in sys.meta_path
        return {"PYTHONPATH": str(self.project_source.resolve())}


def build_conf(setup: Setup, mode: Mode, sim: NovaSimulator, tmp: Path, port: int) -> dict:
    default: dict[str, Any] = {
        "auth_strategy": "keystone",
        "masakari_api_listen": "127.0.0.1",
        "masakari_api_listen_port": port,
        "masakari_api_workers": 1,
        "use_stderr": True,
        "debug": False,
        "state_path": tmp,
        "host_failure_recovery_threads": setup.threads,
        **setup.timings.engine_options(),
        "os_privileged_user_name": "masakari",
        "os_privileged_user_password": "secret",
        "os_privileged_user_tenant": "service",
        "os_privileged_user_auth_url": sim.auth_url,
        "os_user_domain_name": "Default",
        "os_project_domain_name": "Default",
        "nova_catalog_admin_info": "compute:nova:publicURL",
    }
    if mode.reference:
        # the in-process bus of reference_server.py; and no random 0-5 s pause in
        # POST /notifications (the reference's duplicate workaround): see docs/benchmarks.md
        default["transport_url"] = "fake://"
        default["notification_delay_max"] = 0
    conf: dict[str, dict[str, Any]] = {
        "DEFAULT": default,
        "database": {"connection": f"sqlite:///{tmp}/masakari.db"},
        "taskflow": {"connection": f"sqlite:///{tmp}/taskflow.db"},
        "keystone_authtoken": {
            "www_authenticate_uri": sim.auth_url,
            "auth_type": "password",
            **sim.authtoken_plugin_options(),
        },
        "oslo_concurrency": {"lock_path": tmp / "locks"},
        "host_failure": {"force_down_fenced_host": mode.force_down},
    }
    if mode.reference:
        del conf["host_failure"]["force_down_fenced_host"]  # not a reference option
    return conf


def start(setup: Setup, mode: Mode, conf: Path, port: int, tmp: Path) -> list[Proc]:
    if mode.reference:
        if setup.reference_python is None:
            raise BenchError("the reference mode needs --reference-python")
        argv = [str(setup.reference_python), str(setup.reference_server)]
        argv += ["--config-file", str(conf), "--port", str(port)]
        return [Proc(argv, tmp / "reference.log", tmp)]
    run_checked(
        [str(setup.project_bin / "masakari-manage"), "--config-file", str(conf), "db", "sync"],
        tmp,
        timeout=120,
        env=setup.project_env(),
    )
    procs: list[Proc] = []
    for prog in ("masakari-api", "masakari-engine"):
        argv = [str(setup.project_bin / prog), "--config-file", str(conf)]
        procs.append(Proc(argv, tmp / f"{prog}.log", tmp, setup.project_env()))
    return procs


def notification(host: str, event: str) -> dict[str, Any]:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
    payload = {
        "event": event,
        "host_status": "NORMAL",
        "cluster_status": "OFFLINE" if event == "STOPPED" else "ONLINE",
    }
    return {
        "notification": {
            "type": "COMPUTE_HOST",
            "hostname": host,
            "generated_time": now,
            "payload": payload,
        }
    }


def wait_terminal(api: Api, nid: str, timeout: float) -> tuple[str, float]:
    """Polls the notification until it ends; returns its status and when it was seen."""
    deadline = time.monotonic() + timeout
    last = "?"
    while True:
        status, body = api.request("GET", f"/v1/notifications/{nid}")
        seen = time.time()
        if status == 200 and isinstance(body, dict):
            last = str(body.get("notification", {}).get("status"))
            if last in TERMINAL:
                return last, seen
        else:
            last = f"HTTP {status}"
        if time.monotonic() >= deadline:
            return f"timeout (last: {last})", seen
        time.sleep(POLL)


def run_one(setup: Setup, mode: Mode, n: int) -> Result:
    t = setup.timings
    opts = t.engine_options()
    lo, hi = t.evacuate_delay
    delays = evacuation_delays(n, lo, hi, setup.seed)
    wait = float(opts["wait_period_after_service_update"]) if mode.design_wait else 0.0
    bound: Bound = recovery_bound(delays, setup.threads, wait, opts["verify_interval"])
    real = recovery_bound(
        evacuation_delays(n, t.evacuate_min, t.evacuate_max, setup.seed),
        setup.threads,
        t.wait_period_after_service_update if mode.design_wait else 0.0,
        t.verify_interval,
    )
    result = Result(
        mode.name, n, t.scale, "not run", None, bound.total, bound.with_polling, wait, None, None
    )
    result.unscaled_bound, result.unscaled_bound_polled = real.total, real.with_polling
    tmp = Path(tempfile.mkdtemp(prefix=f"recovery-{mode.name}-{n}-", dir=setup.workdir))
    (tmp / "locks").mkdir()
    procs: list[Proc] = []
    with NovaSimulator(
        service_down_time=t.service_down_time * t.scale, evacuate_delay=(lo, hi), seed=setup.seed
    ) as sim:
        try:
            for host in (FAILED_HOST, *SPARE_HOSTS, WARMUP_HOST):
                sim.add_service(host)
            for i in range(n):
                sim.add_server(
                    host=FAILED_HOST, name=f"vm-{i:03d}", metadata={"HA_Enabled": "True"}
                )
            port = free_port()
            conf = tmp / "masakari.conf"
            write_conf(conf, build_conf(setup, mode, sim, tmp, port))
            procs = start(setup, mode, conf, port, tmp)
            api = Api(port, ADMIN_TOKEN)
            api.wait_ready(procs, setup.start_timeout)

            seg = api.call(
                "POST",
                "/v1/segments",
                {
                    "segment": {
                        "name": "bench",
                        "recovery_method": "auto",
                        "service_type": "compute",
                    }
                },
            )["segment"]["uuid"]
            for host in (FAILED_HOST, WARMUP_HOST):
                api.call(
                    "POST",
                    f"/v1/segments/{seg}/hosts",
                    {"host": {"name": host, "type": "COMPUTE", "control_attributes": "ssh"}},
                )
            # Warm-up: a STARTED notification goes through the engine without touching Nova,
            # so the measured run does not pay for the engine's first database work.
            warm = api.call("POST", "/v1/notifications", notification(WARMUP_HOST, "STARTED"))
            status, _ = wait_terminal(api, warm["notification"]["notification_uuid"], 60)
            if status not in TERMINAL:
                raise BenchError(f"warm-up notification: {status}\n" + _tails(procs))

            sim.clear_calls()
            sim.power_off(FAILED_HOST)
            t0 = time.time()
            posted = api.call("POST", "/v1/notifications", notification(FAILED_HOST, "STOPPED"))
            nid = posted["notification"]["notification_uuid"]
            timeout = 60 + 3 * bound.with_polling
            status, seen = wait_terminal(api, nid, timeout)
            result.status = status
            result.measured = seen - t0 if status in TERMINAL else None
            _observe(result, sim, setup.seed, t0)
            if setup.trace:
                print(_trace(sim, t0), flush=True)
            if not result.ok:
                result.error = f"notification {status}, {result.moved}/{n} moved"
                if setup.verbose:
                    print(_tails(procs), file=sys.stderr)
        except BenchError as exc:
            result.status, result.error = "error", str(exc)
        finally:
            for p in reversed(procs):
                p.stop()
    if result.ok:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        result.error = (result.error or "") + f" (logs in {tmp})"
    return result


def _observe(result: Result, sim: NovaSimulator, seed: int, t0: float) -> None:
    """What Nova saw: evacuate calls, accepted (2xx) or refused, and the moves."""
    with sim.lock:
        evacs = [
            c
            for c in sim.calls
            if c.method == "POST" and isinstance(c.body, dict) and "evacuate" in c.body
        ]
        lo, hi = sim._delay
    accepted = [c for c in evacs if 200 <= c.status < 300]
    result.evacuations_accepted = len(accepted)
    result.evacuations_refused = len(evacs) - len(accepted)
    if accepted:
        result.first_evacuation = accepted[0].time - t0
        # the k-th accepted call drew the k-th delay (calls are recorded as they arrive,
        # so two simultaneous ones may be swapped: a diagnostic, not the bound)
        delays = evacuation_delays(len(accepted), lo, hi, seed)
        result.nova_done = max(c.time + d for c, d in zip(accepted, delays, strict=True)) - t0
    result.moved = sum(1 for s in sim.snapshot()["servers"].values() if s["host"] != FAILED_HOST)


def _trace(sim: NovaSimulator, t0: float) -> str:
    """The Nova calls of the measured run, in seconds after the POST."""
    with sim.lock:
        calls = list(sim.calls)
    lines = []
    for c in calls:
        what = next(iter(c.body)) if isinstance(c.body, dict) and len(c.body) == 1 else ""
        query = "&".join(f"{k}={v}" for k, v in c.query)
        path = c.path + ("?" + query if query else "")
        lines.append(f"  {c.time - t0:8.3f}  {c.method:4} {path} {what} -> {c.status}")
    return "\n".join(lines)


def _tails(procs: list[Proc]) -> str:
    return "\n".join(p.tail() for p in procs)


# --- report -------------------------------------------------------------------------------


def _num(v: float | None, fmt: str = ".1f") -> str:
    return "-" if v is None else format(v, fmt)


HEADER = (
    "mode",
    "N",
    "measured s",
    "bound s",
    "ratio",
    "bound+polling s",
    "1st evac s",
    "Nova done s",
    "measured/scale s",
    "unscaled bound s",
    "unscaled estimate s",
    "est. ratio",
    "status",
)


def row(r: Result) -> list[str]:
    return [
        r.mode,
        str(r.instances),
        _num(r.measured, ".2f"),
        _num(r.bound, ".2f"),
        _num(r.ratio, ".2f"),
        _num(r.bound_polled, ".2f"),
        _num(r.first_evacuation, ".2f"),
        _num(r.nova_done, ".2f"),
        _num(None if r.measured is None else r.measured / r.scale, ".0f"),
        _num(r.unscaled_bound, ".0f"),
        _num(r.unscaled_estimate, ".0f"),
        _num(r.unscaled_ratio, ".2f"),
        r.status if r.ok else f"{r.status} ({r.moved}/{r.instances} moved)",
    ]


def text_table(results: list[Result]) -> str:
    rows = [list(HEADER)] + [row(r) for r in results]
    widths = [max(len(x[i]) for x in rows) for i in range(len(HEADER))]
    lines = [
        "  ".join(
            c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(x, widths, strict=True))
        )
        for x in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(results: list[Result]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(row(r)) + " |" for r in results]
    return "\n".join(lines)


def describe_project(setup: Setup) -> str:
    if setup.project_source is not None:
        return f"source tree {setup.project_source}"
    try:
        rev = subprocess.run(
            ["git", "-C", str(REPO), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        rev = ""
    return f"installed from {REPO}" + (f" at {rev}" if rev else "")


# --- command line -------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--instances", default="10,50,200", help="comma-separated instance counts (10,50,200)"
    )
    ap.add_argument(
        "--time-scale",
        type=float,
        default=0.1,
        help="factor applied to every timing (0.1: 180 s waits become 18 s)",
    )
    ap.add_argument(
        "--modes",
        default=None,
        help="comma-separated among default, fast, reference "
        "(default: default,fast, and reference when --reference-python is given)",
    )
    ap.add_argument(
        "--reference-python", type=Path, default=None, help="python of a venv with masakari==22.0.0"
    )
    ap.add_argument("--reference-server", type=Path, default=DEFAULT_REFERENCE_SERVER)
    ap.add_argument("--seed", type=int, default=0, help="seed of the simulator's evacuation delays")
    ap.add_argument("--threads", type=int, default=3, help="host_failure_recovery_threads")
    ap.add_argument(
        "--project-bin",
        type=Path,
        default=Path(sys.executable).parent,
        help="directory of masakari-api/-engine/-manage",
    )
    ap.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="where runs keep their files (a temporary directory)",
    )
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    ap.add_argument(
        "--project-source",
        type=Path,
        default=None,
        help="run the project from this source tree (e.g. a `git archive` of a commit) "
        "instead of the installed one",
    )
    ap.add_argument("--trace", action="store_true", help="print each run's Nova calls")
    ap.add_argument("--markdown", action="store_true", help="also print the table in Markdown")
    args = ap.parse_args(argv)
    if not 0 < args.time_scale <= 1:
        ap.error("--time-scale must be in (0, 1]")
    if args.threads < 1:
        ap.error("--threads must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    counts = [int(x) for x in args.instances.split(",") if x.strip()]
    if args.modes:
        names = [x.strip() for x in args.modes.split(",") if x.strip()]
    else:
        names = ["default", "fast"] + (["reference"] if args.reference_python else [])
    unknown = [x for x in names if x not in MODES]
    if unknown:
        print(f"unknown mode(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    if "reference" in names:
        if args.reference_python is None:
            print("the reference mode needs --reference-python", file=sys.stderr)
            return 2
        if not args.reference_server.exists():
            print(f"{args.reference_server} not found (--reference-server)", file=sys.stderr)
            return 2
    timings = Timings(scale=args.time_scale)
    try:
        timings.check()
    except BenchError as exc:
        print(exc, file=sys.stderr)
        return 2
    own_workdir = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="recovery-bench-")) if own_workdir else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    setup = Setup(
        timings,
        args.seed,
        args.threads,
        workdir,
        args.project_bin,
        args.reference_python,
        args.reference_server,
        trace=args.trace,
        project_source=args.project_source,
    )
    print(f"time scale {timings.scale:g}, seed {setup.seed}, {setup.threads} evacuation threads")
    if any(not MODES[x].reference for x in names):
        print(f"project: {describe_project(setup)}")
    print("\n".join(timings.describe()))
    print()
    results: list[Result] = []
    for n in counts:
        for name in names:
            print(f"running {name} N={n} ...", flush=True)
            r = run_one(setup, MODES[name], n)
            results.append(r)
            print(
                f"  {r.status}: measured {_num(r.measured, '.2f')} s, bound {r.bound:.2f} s"
                + (f"\n  {r.error}" if r.error else ""),
                flush=True,
            )
    print()
    print(text_table(results))
    if args.markdown:
        print()
        print(markdown_table(results))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "time_scale": timings.scale,
                    "seed": setup.seed,
                    "threads": setup.threads,
                    "options": timings.engine_options(),
                    "results": [
                        dataclasses.asdict(r)
                        | {
                            "ratio": r.ratio,
                            "unscaled_estimate": r.unscaled_estimate,
                            "unscaled_ratio": r.unscaled_ratio,
                        }
                        for r in results
                    ],
                },
                indent=2,
            )
        )
    if own_workdir and all(r.ok for r in results):
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
