"""Why a recovery failed, as the last progress message of its failed task: from API 1.4 and
in ``masakari-manage notification show``; the details a 1.3 client reads stay as stored."""

from __future__ import annotations

import contextlib
import datetime
import io

import pytest

from masakari.cmd import manage
from masakari.db import progress
from masakari.ha import failed_task
from tests.support.deployment import Deployment
from tests.support.recoveries import FAST, recover


@pytest.fixture(scope="module")
def failed() -> dict:
    """One failed host recovery (Nova fails one evacuation), read every way."""
    with Deployment({"DEFAULT": {**FAST, "api_max_microversion": "1.4"}}) as dep:
        nid, _ = recover(dep)
        path = f"/v1/notifications/{nid}"
        with dep.db.reader() as session:
            stored = progress.workflow_details(session, nid)
        return {
            "nid": nid,
            "stored": stored,
            "1.1": dep.request("GET", path, version="1.1").json["notification"],
            "1.3": dep.request("GET", path, version="1.3").json["notification"],
            "1.4": dep.request("GET", path, version="1.4").json["notification"],
            # The timeline reads the same database; the deployment is gone after the fixture.
            "timeline": _timeline(dep.conf_path, nid),
        }


def _timeline(conf_path: str, nid: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert manage.main(["--config-file", conf_path, "notification", "show", nid]) == 0
    return out.getvalue()


def test_up_to_1_3_the_details_are_the_stored_ones(failed) -> None:
    assert failed["1.3"]["status"] == "error"
    for version in ("1.1", "1.3"):
        assert failed[version]["recovery_workflow_details"] == failed["stored"]
        assert "failure_reason" not in failed[version]
    assert all(
        not d["message"].startswith("Recovery failed:")
        for task in failed["stored"]
        for d in task["progress_details"]
    )


def test_from_1_4_the_failed_task_ends_with_the_reason(failed) -> None:
    body = failed["1.4"]
    reason = body["failure_reason"]
    assert "Failed to evacuate instances" in reason
    stored = failed["stored"]
    details = body["recovery_workflow_details"]
    # Every other task, and everything the failed task reported, as stored.
    assert details[:-1] == stored[:-1]
    last, stored_last = details[-1], stored[-1]
    assert last["name"] == stored_last["name"] == "EvacuateInstancesTask"
    assert {k: v for k, v in last.items() if k != "progress_details"} == {
        k: v for k, v in stored_last.items() if k != "progress_details"
    }
    assert last["progress_details"][:-1] == stored_last["progress_details"]
    added = last["progress_details"][-1]
    assert added["message"] == f"Recovery failed: {reason}"
    assert added["progress"] == str(float(last["progress"]))
    # After every message the task reported: the reason was recorded when the flow failed
    # (to the second, as the database keeps its own times).
    reported = datetime.datetime.fromisoformat(stored_last["progress_details"][-1]["timestamp"])
    assert datetime.datetime.fromisoformat(added["timestamp"]) >= reported.replace(microsecond=0)


def test_timeline_shows_the_reason(failed) -> None:
    reason = failed["1.4"]["failure_reason"]
    lines = failed["timeline"].splitlines()
    assert lines[2] == f"failure reason: {reason}"
    tasks = lines[lines.index("tasks:") + 2 : lines.index("instances:") - 1]
    assert "EvacuateInstancesTask" in tasks[-1]
    assert tasks[-1].endswith(f"Recovery failed: {reason}")
    assert not any("Recovery failed" in line for line in tasks[:-1])


class _Failure:
    reason = "boom"
    updated_at = datetime.datetime(2026, 1, 1, 0, 0, 1)


def test_only_a_failed_notification_with_a_reason_and_tasks_gets_the_message() -> None:
    assert [
        s
        for s in ("new", "running", "error", "failed", "finished", "ignored")
        if failed_task.failed(s)
    ] == ["error", "failed"]
    task = {"name": "T", "state": "REVERTED", "progress": 1.0, "progress_details": []}
    assert failed_task.with_reason([], _Failure()) == []  # type: ignore[arg-type]
    assert failed_task.with_reason([task], None) == [task]
    shown = failed_task.with_reason([task], _Failure())  # type: ignore[arg-type]
    assert shown[0]["progress_details"] == [
        {"timestamp": "2026-01-01 00:00:01", "message": "Recovery failed: boom", "progress": "1.0"}
    ]
    assert task["progress_details"] == []  # the stored details are not changed
