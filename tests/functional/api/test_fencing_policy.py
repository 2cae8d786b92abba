"""Who reads host fencing's attempts (1.6 ``fencing``) and a failure's evidence (1.7
``evidence``): rules of their own, admin by default, so that a policy file opening
notification show to members does not show them BMC addresses and agent errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from masakari.db import fencing
from masakari.db.models import utcnow
from masakari.policies import notifications as policies
from tests.support.deployment import ADMIN, MEMBER, Deployment, report, segment_with_host

SHOW_TO_MEMBERS = f'"{policies.DETAIL}": "rule:admin_api or role:member"\n'


def _deployment(tmp_path: Path, policy: str) -> Deployment:
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(policy)
    return Deployment(
        {
            "DEFAULT": {"api_max_microversion": "1.7"},
            "oslo_policy": {"policy_file": str(policy_file)},
            # Reports are judged, and kept as evidence: what 1.7 shows.
            "verdict": {"rule": "any_two"},
        }
    )


def _fenced_notification(dep: Deployment) -> str:
    """A host failure with its report kept as evidence and one fencing attempt."""
    segment_with_host(dep, "compute-1")
    nid = report(dep, "compute-1")
    with dep.db.writer() as s:
        off = fencing.start(s, nid, "e-1", 1, "compute-1", 0, "ipmi 192.0.2.1:623", "off", utcnow())
        fencing.answer(s, off, fencing.REFUSED, "bad password for user root", 0.2)
    return nid


@pytest.fixture
def members_show(tmp_path: Path) -> Iterator[tuple[Deployment, str]]:
    with _deployment(tmp_path, SHOW_TO_MEMBERS) as dep:
        yield dep, _fenced_notification(dep)


def _shown(dep: Deployment, nid: str, headers: dict[str, str]) -> dict[str, Any]:
    r = dep.request("GET", f"/v1/notifications/{nid}", headers=headers, version="1.7")
    assert r.status_int == 200, r.text
    shown: dict[str, Any] = r.json["notification"]
    return shown


def test_a_member_allowed_to_show_sees_neither_field(members_show) -> None:
    dep, nid = members_show
    shown = _shown(dep, nid, MEMBER)
    assert shown["notification_uuid"] == nid
    assert "fencing" not in shown and "evidence" not in shown
    assert "192.0.2.1" not in str(shown)


def test_an_admin_sees_both(members_show) -> None:
    dep, nid = members_show
    shown = _shown(dep, nid, ADMIN)
    assert [(a["driver"], a["result"]) for a in shown["fencing"]] == [
        ("ipmi 192.0.2.1:623", "refused")
    ]
    assert [e["kind"] for e in shown["evidence"]][:1] == ["report"]


@pytest.mark.parametrize("granted", [policies.FENCING, policies.EVIDENCE])
def test_a_policy_file_grants_each_field_on_its_own(tmp_path: Path, granted: str) -> None:
    grant = f'"{granted}": "rule:admin_api or role:member"\n'
    with _deployment(tmp_path, SHOW_TO_MEMBERS + grant) as dep:
        nid = _fenced_notification(dep)
        shown = _shown(dep, nid, MEMBER)
    fields = {policies.FENCING: "fencing", policies.EVIDENCE: "evidence"}
    (denied,) = (field for rule, field in fields.items() if rule != granted)
    assert shown[fields[granted]] and denied not in shown
