"""Faults: exception -> status and fault name, the body, and the version headers."""

from __future__ import annotations

import json
import logging

import pytest
import sqlalchemy as sa
import webob.exc

from masakari import exception
from masakari.api import errors, faults, microversion, outage
from masakari.compute import nova


@pytest.mark.parametrize(
    ("exc", "status", "name"),
    [
        (exception.ValidationError(detail="x"), 400, "badRequest"),
        (exception.MarkerNotFound(marker="7"), 400, "badRequest"),
        (exception.HostNotFoundByName(host_name="h"), 400, "badRequest"),
        (exception.ComputeNotFoundByName(compute_name="h"), 400, "badRequest"),
        (exception.MalformedURL(project_id="a", context_project_id="b"), 400, "badRequest"),
        (exception.PolicyNotAuthorized(action="a"), 403, "forbidden"),
        (exception.SegmentNotFound(id="s"), 404, "itemNotFound"),
        (errors.ResourceNotFound(), 404, "itemNotFound"),
        (errors.ActionNotImplemented(method="PUT", action="update"), 405, "badMethod"),
        (microversion.UnsupportedVersion((1, 9), req_ver="1.9", min_ver="1.0", max_ver="1.3"),
         406, "masakariFault"),
        (exception.SegmentExists(name="s"), 409, "conflictingRequest"),
        (exception.DuplicateNotification(type="PROCESS"), 409, "conflictingRequest"),
        (exception.HostOnMaintenance(host_name="h"), 409, "conflictingRequest"),
        (errors.UnsupportedMediaType(), 415, "badMediaType"),
        (ZeroDivisionError(), 500, "masakariFault"),
    ],
)  # fmt: skip
def test_status_and_fault_name(exc: BaseException, status: int, name: str) -> None:
    response = faults.from_exception(exc, (1, 0))
    assert response.status_int == status
    assert list(json.loads(response.body)) == [name]
    assert response.headers["Content-Type"] == "application/json; charset=UTF-8"


def test_unexpected_errors_name_their_class() -> None:
    status, message = faults.status_and_message(ZeroDivisionError())
    assert (status, message) == (500, faults.UNEXPECTED % "<class 'ZeroDivisionError'>")


def nova_error(status: int, reference_class: str) -> nova.NovaRequestError:
    return nova.NovaRequestError(
        f"text (HTTP {status})", status=status, detail="", reference_class=reference_class
    )


def test_nova_forbidden_passes_through() -> None:
    assert faults.status_and_message(nova_error(403, "masakari.exception.Forbidden")) == (
        403,
        "text (HTTP 403)",
    )


def test_other_nova_errors_are_500_naming_the_reference_class() -> None:
    status, message = faults.status_and_message(nova_error(409, "masakari.exception.Conflict"))
    assert status == 500
    assert message.endswith("\n<class 'masakari.exception.Conflict'>")


def test_version_headers() -> None:
    with_version = faults.fault(404, "x", (1, 2))
    assert with_version.headers["OpenStack-API-Version"] == "instance-ha 1.2"
    assert with_version.headers["Vary"] == "OpenStack-API-Version"
    not_acceptable = faults.fault(406, "x", vary=True)
    assert "OpenStack-API-Version" not in not_acceptable.headers
    assert not_acceptable.headers["Vary"] == "OpenStack-API-Version"
    bare = faults.fault(400, "x")
    assert "Vary" not in bare.headers and "OpenStack-API-Version" not in bare.headers


def test_fault_wrapper_turns_escaping_errors_into_json_500() -> None:
    def broken(environ: dict, start_response: object) -> None:
        raise RuntimeError("boom")

    import webob

    response = webob.Request.blank("/").get_response(faults.FaultWrapper(broken))
    assert response.status_int == 500
    assert response.json == {"masakariFault": {"code": 500, "message": faults.FaultWrapper.MESSAGE}}


@pytest.mark.parametrize(
    "exc",
    [
        UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
        webob.exc.HTTPRequestEntityTooLarge(explanation="Request is too large."),
        nova_error(403, "masakari.exception.Forbidden"),
        nova_error(409, "masakari.exception.Conflict"),
        exception.DuplicateNotification(type="PROCESS"),
        exception.ValidationError(detail="x"),
        ZeroDivisionError(),
    ],
)
def test_classify_is_the_answer_without_side_effects(
    exc: BaseException, caplog: pytest.LogCaptureFixture
) -> None:
    """One judgement: the status the notification metrics count is the status answered (a
    413 or a Nova 403 was counted 500 by a second, shorter table)."""
    with caplog.at_level(logging.DEBUG):
        classified = faults.classify(exc)
    assert caplog.records == []
    assert faults.status_and_message(exc) == classified


def test_classify_leaves_the_outage_log_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = outage.OutageLog("answering 503")
    monkeypatch.setattr(outage, "OUTAGES", fresh)
    refused = sa.exc.OperationalError(None, None, Exception("connection refused"))
    assert faults.classify(refused) == (503, outage.MESSAGE)
    assert not fresh.down
    faults.status_and_message(refused)
    assert fresh.down
