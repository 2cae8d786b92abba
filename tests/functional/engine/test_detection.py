"""The failure detector and the verdict in engines of this process, against the Nova
simulator's heartbeats (SQLite). Asserted on the database and on what Nova received; the
self-check on its metric."""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from masakari import coordination, detection, exception, metrics
from masakari.compute import retry
from masakari.compute.nova import NovaClient
from masakari.db import holds
from masakari.db.database import Database
from masakari.db.models import FailureEvidence, Notification
from masakari.engine.fencing import HostFencing
from masakari.engine.service import EngineService
from masakari.fencing.base import DriverSpec, PowerState
from masakari.ha import notifications as intake
from masakari.ha.intake import Rules
from tests.db import backends
from tests.fakes.nova import COMPUTE_PREFIX, IDENTITY_PREFIX, NovaSimulator
from tests.support.engine import (
    HOST_DOWN,
    add_host,
    add_segment,
    make_conf,
    notify,
    wait_for,
    wait_status,
)
from tests.support.tcpproxy import TCPProxy

POLL = 0.3
GRACE = 1.0
DETECTION = {
    "detection.enabled": True,
    "detection.poll_interval": POLL,
    "detection.grace_period": GRACE,
    "verdict.wait": 1.0,
}


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def db(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Database]:
    """The drills on the embedded default and on both database servers."""
    with backends.migrated(request, request.param, str(tmp_path)) as database:
        yield database


@pytest.fixture
def sim() -> Iterator[NovaSimulator]:
    # Nova says a silent host is down as soon as the detector's grace runs out: its
    # evacuations are accepted at once.
    with NovaSimulator(service_down_time=GRACE) as simulator:
        yield simulator


def rows(db: Database) -> list[Notification]:
    with db.reader() as s:
        return list(s.scalars(sa.select(Notification).order_by(Notification.id)))


def evidence(db: Database, nid: str) -> list[FailureEvidence]:
    with db.reader() as s:
        return list(
            s.scalars(
                sa.select(FailureEvidence)
                .where(FailureEvidence.notification_uuid == nid)
                .order_by(FailureEvidence.id)
            )
        )


def hold_reason(db: Database, nid: str) -> str | None:
    with db.reader() as s:
        return holds.reasons(s, [nid]).get(nid)


def blind(reason: str) -> float | None:
    return metrics.OWN.get_sample_value("masakari_detection_blind", {"reason": reason})


def gate(name: str) -> float | None:
    return metrics.OWN.get_sample_value("masakari_detection_gate_active", {"gate": name})


def evacuated(sim: NovaSimulator, server: str) -> str:
    return sim.server(server)["OS-EXT-SRV-ATTR:host"]


@pytest.fixture
def detecting(db: Database, sim: NovaSimulator) -> Iterator[Any]:
    """Engines with the detector; ``nova_url``/``auth_url`` let a test put a proxy between
    the detector and Nova or Keystone."""
    started: list[EngineService] = []

    def start(
        name: str = "ctl-1", auth_url: str | None = None, fencing: Any = None, **overrides: Any
    ) -> EngineService:
        conf = make_conf(sim, host=name, **{**DETECTION, **overrides})
        if auth_url is not None:
            conf.set_override("os_privileged_user_auth_url", auth_url)
        session = sim.session(timeout=2)
        if auth_url is not None:
            session.auth.auth_url = auth_url
        client = NovaClient(session, timeout=2, policy=retry.DETECTION)
        probe = detection.keystone_probe(session, auth_url or sim.auth_url, 2)
        owner = f"{name}:detector"
        leadership = coordination.Everyone()
        found = detection.build(conf, db, client, probe, owner, leadership)
        service = EngineService(
            conf,
            db,
            sim.client(timeout=5),
            owner=owner,
            leadership=leadership,
            addons=[found] if found is not None else [],
            fencing=fencing,
        )
        service.start()
        started.append(service)
        return service

    yield start
    for service in started:
        service.stop(grace=2)


def cloud(db: Database, sim: NovaSimulator, hosts: int = 4) -> dict[str, str]:
    """One segment of ``hosts`` hosts, an HA instance on each: host -> instance."""
    segment = add_segment(db)
    servers = {}
    for i in range(1, hosts + 1):
        name = f"compute-{i}"
        sim.add_service(name)
        add_host(db, segment, name)
        servers[name] = sim.add_server(host=name, metadata={"HA_Enabled": "True"})
    return servers


def monitor_report(conf_rules: Rules, db: Database, host: str, status: str = "NORMAL") -> Any:
    data = {
        "type": "COMPUTE_HOST",
        "hostname": host,
        "generated_time": datetime.datetime.now(datetime.UTC).isoformat(),
        "payload": {**HOST_DOWN, "host_status": status},
    }
    return intake.record(db, data, conf_rules)


def test_a_silent_host_is_one_notification_and_the_monitors_report_of_it_a_409(
    db, sim, detecting
) -> None:
    servers = cloud(db, sim)
    engine = detecting()
    time.sleep(3 * POLL)
    assert rows(db) == []
    stopped = time.time()
    sim.power_off("compute-2")
    (found,) = wait_for(lambda: rows(db), 10, "the detector reports compute-2")
    payload = json.loads(found.payload)
    assert (payload["detector"], payload["host_status"]) == ("nova-services", "UNKNOWN")
    late = found.generated_time.replace(tzinfo=datetime.UTC).timestamp() - stopped
    # MariaDB's DATETIME (the reference's schema) keeps whole seconds.
    kept_to = 1.0 if db.engine.dialect.name == "mysql" else 0.0
    assert late + kept_to >= GRACE, "reported before the grace period ran out"
    # The monitor's report of the same failure, as the detector's is being judged.
    with pytest.raises(exception.DuplicateNotification):
        monitor_report(Rules.from_conf(engine.conf), db, "compute-2")
    assert wait_status(db, found.notification_uuid) == "finished"
    time.sleep(3 * POLL)
    assert [r.notification_uuid for r in rows(db)] == [found.notification_uuid]
    assert evacuated(sim, servers["compute-2"]) != "compute-2"
    assert sim.evacuations_accepted == {servers["compute-2"]: 1}
    kept = [(e.kind, e.source, e.value) for e in evidence(db, found.notification_uuid)]
    assert kept[:3] == [
        ("report", "detector nova-services", "UNKNOWN"),
        ("nova", "engine ctl-1:detector", "down"),
        ("report", "monitor", "NORMAL"),
    ]
    assert kept[-1][:2] == ("verdict", "rule monitor")


def test_a_detected_failure_no_monitor_confirms_is_held_until_released(db, sim, detecting) -> None:
    servers = cloud(db, sim)
    detecting()
    sim.power_off("compute-3")
    (found,) = wait_for(lambda: rows(db), 10, "the detector reports compute-3")
    nid = found.notification_uuid
    reason = wait_for(lambda: hold_reason(db, nid), 15, "the verdict holds it")
    assert reason == "verdict: monitor: no monitor's report of the failure within 1 s"
    assert sim.evacuations_accepted == {}
    intake.release(db, nid)
    assert wait_status(db, nid) == "finished"
    assert evacuated(sim, servers["compute-3"]) != "compute-3"
    verdicts = [e for e in evidence(db, nid) if e.kind == "verdict"]
    assert [v.failed for v in verdicts] == [False, True]
    assert verdicts[-1].detail.startswith("released by an operator")


def test_sixty_percent_of_a_segment_stale_at_once_is_held_then_released(db, sim, detecting) -> None:
    servers = cloud(db, sim, hosts=5)
    detecting()
    time.sleep(3 * POLL)
    for host in ("compute-1", "compute-2", "compute-3"):
        sim.stale(host, 100)
    held = wait_for(lambda: len(rows(db)) == 3 and rows(db), 10, "three reports")
    time.sleep(3 * POLL)
    assert len(rows(db)) == 3
    for row in held:
        assert hold_reason(db, row.notification_uuid) == holds.REASON_BREAKER
        assert row.status == "new"
    assert gate("breaker") == 1
    assert sim.evacuations_accepted == {}
    for row in held:
        intake.release(db, row.notification_uuid)
    for row in held:
        assert wait_status(db, row.notification_uuid) == "finished"
    for host in ("compute-1", "compute-2", "compute-3"):
        assert evacuated(sim, servers[host]) in ("compute-4", "compute-5")
    # Recovered, the three are on maintenance: the breaker lets go, its cooldown goes on.
    wait_for(lambda: gate("breaker") == 0, 10, "the breaker lets go")
    assert gate("storm") == 1


@pytest.mark.parametrize("cut", ["nova", "keystone"])
def test_a_detector_cut_off_from_nova_or_keystone_reports_nothing_and_says_why(
    db, sim, detecting, cut
) -> None:
    cloud(db, sim)
    target = "compute" if cut == "nova" else "identity"
    with TCPProxy("127.0.0.1", int(sim.base_url.rsplit(":", 1)[1])) as proxy:
        proxied = f"http://127.0.0.1:{proxy.port}"
        if cut == "nova":
            sim.catalog_overrides["compute"] = proxied + COMPUTE_PREFIX
            detecting()
        else:
            detecting(auth_url=proxied + IDENTITY_PREFIX + "/v3")
        wait_for(lambda: blind(cut) == 0, 10, f"the detector reads through the {target} proxy")
        proxy.stop()
        wait_for(lambda: blind(cut) == 1, 15, f"the self-check says {cut}")
        for host in ("compute-1", "compute-2", "compute-3", "compute-4"):
            sim.stale(host, 100)
        time.sleep(6 * POLL)
        assert rows(db) == []
        assert blind(cut) == 1
        # Back: every host is down now, which the breaker holds rather than recovers.
        proxy.start()
        wait_for(lambda: blind(cut) == 0, 15, "the detector sees again")
        found = wait_for(lambda: len(rows(db)) == 4 and rows(db), 10, "four reports")
        assert {hold_reason(db, r.notification_uuid) for r in found} == {holds.REASON_BREAKER}


class BMC:
    """A BMC that powers its host off when asked, and says so; and Nova sees it."""

    def __init__(self, spec: DriverSpec, sim: NovaSimulator, host: str) -> None:
        self.spec, self.sim, self.host = spec, sim, host
        self.state = PowerState.ON

    def power_off(self) -> None:
        self.state = PowerState.OFF
        self.sim.stale(self.host, 100)

    def power_status(self) -> PowerState:
        return self.state

    def power_on(self) -> None:
        self.state = PowerState.ON


class Plan:
    def __init__(self, specs: dict[str, list[DriverSpec]]) -> None:
        self.specs = specs

    def drivers_for(self, host_name: str, *_: Any) -> list[DriverSpec] | None:
        return self.specs.get(host_name)


def fencing(sim: NovaSimulator, hosts: set[str]) -> tuple[HostFencing, dict[str, BMC]]:
    """Host fencing with one IPMI entry per host of ``hosts``, answered by a BMC double."""
    specs = {h: DriverSpec("ipmi", address=f"bmc-{h}", password="s3cret") for h in hosts}
    bmcs = {h: BMC(spec, sim, h) for h, spec in specs.items()}
    by_spec = {id(b.spec): b for b in bmcs.values()}
    fenced = HostFencing(
        plan=Plan({h: [spec] for h, spec in specs.items()}),
        power_driver=lambda spec: by_spec[id(spec)],  # type: ignore[return-value]
        confirm_interval=0.1,
        confirm_timeout=2.0,
    )
    return fenced, bmcs


@pytest.mark.parametrize(
    ("rule", "case", "confirmed"),
    [
        ("any_two", "monitor and Nova", True),
        ("any_two", "monitor alone", False),
        # UNKNOWN and a silent nova-compute: a partition looks the same; no power-off proof.
        ("any_two", "unknown report and Nova", False),
        ("any_two", "fenceable", True),
        ("fence", "fenceable", True),
        ("fence", "no fencing", False),
    ],
)
def test_the_verdict_rules(db, sim, detecting, rule, case, confirmed) -> None:
    servers = cloud(db, sim, hosts=3)
    fenced, bmcs = fencing(sim, {"compute-1"} if case == "fenceable" else set())
    detecting(
        fencing=fenced if case == "fenceable" or rule == "fence" else None,
        **{"verdict.rule": rule, "detection.enabled": False},
    )
    if case != "monitor alone":
        sim.stale("compute-1", 100)
    with db.reader() as s:
        host_uuid = s.scalar(sa.text("SELECT uuid FROM hosts WHERE name = 'compute-1'"))
    report = HOST_DOWN
    if case in ("unknown report and Nova", "fenceable"):
        report = {**HOST_DOWN, "host_status": "UNKNOWN"}
    nid = notify(db, host_uuid, "COMPUTE_HOST", report)
    if confirmed:
        assert wait_status(db, nid) == "finished"
        assert evacuated(sim, servers["compute-1"]) != "compute-1"
        if case == "fenceable":  # the verdict let the fence act; the fence was the proof
            assert bmcs["compute-1"].state is PowerState.OFF
    else:
        reason = wait_for(lambda: hold_reason(db, nid), 15, "the verdict holds it")
        expected = {
            "monitor alone": "verdict: any_two: only the monitor's report (host_status NORMAL) "
            "says the host failed; Nova says its nova-compute is up within 1 s",
            "unknown report and Nova": "verdict: any_two: only Nova says the host failed; the "
            "monitor's report says host_status UNKNOWN (no power-off proof) within 1 s",
            "no fencing": "verdict: fence: no host fencing is configured for the host",
        }[case]
        assert reason == expected
        assert sim.evacuations_accepted == {}


def test_without_monitors_a_detected_host_is_fenced_then_recovered(db, sim, detecting) -> None:
    """The setup without agents: the detector finds it, the rule lets host fencing act, the
    fence proves it off, and only then are its instances evacuated."""
    servers = cloud(db, sim)
    fenced, bmcs = fencing(sim, {"compute-2"})
    detecting(fencing=fenced, **{"verdict.rule": "fence"})
    sim.power_off("compute-2")
    (found,) = wait_for(lambda: rows(db), 10, "the detector reports compute-2")
    assert wait_status(db, found.notification_uuid) == "finished"
    assert bmcs["compute-2"].state is PowerState.OFF
    assert sim.evacuations_accepted == {servers["compute-2"]: 1}
    verdicts = [e for e in evidence(db, found.notification_uuid) if e.kind == "verdict"]
    assert [(v.failed, v.detail) for v in verdicts] == [
        (True, "host fencing proves the host off before evacuating")
    ]


def test_a_cancelled_report_is_not_made_again_until_the_host_heartbeats_then_goes_silent(
    db, sim, detecting
) -> None:
    cloud(db, sim)
    detecting(duplicate_notification_detection_interval=1)
    sim.power_off("compute-2")
    (first,) = wait_for(lambda: rows(db), 10, "the detector reports compute-2")
    nid = first.notification_uuid
    wait_for(lambda: hold_reason(db, nid), 15, "the verdict holds it")
    intake.cancel(db, nid)
    # Silent still, past the duplicate window: the same failure, which the operator ended.
    time.sleep(1.0 + 8 * POLL)
    assert [(r.notification_uuid, r.status) for r in rows(db)] == [(nid, "ignored")]
    sim.power_on("compute-2")
    time.sleep(3 * POLL)
    assert len(rows(db)) == 1
    # It heartbeated, then stops again: a failure of its own.
    sim.power_off("compute-2")
    second = wait_for(lambda: len(rows(db)) == 2 and rows(db)[1], 10, "a new report")
    assert json.loads(second.payload)["detector"] == "nova-services"
    assert second.source_host_uuid == first.source_host_uuid
