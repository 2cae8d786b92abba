"""Domain errors: what went wrong, never how HTTP shows it (see masakari.api.faults).

Tree::

    MasakariError
    ├── Invalid ── InvalidInput, ValidationError, InvalidSortKey, InvalidMarker,
    │              DuplicateNotification, HostOnMaintenance, MalformedURL, DrillsDisabled, ...
    ├── NotFound ── SegmentNotFound, HostNotFound, NotificationNotFound, VMoveNotFound,
    │               MarkerNotFound, ComputeNotFoundByName, DrillNotFound, ...
    ├── Conflict ── SegmentInUse, HostInUse, SegmentExists, HostExists, DrillHostBusy
    ├── Forbidden ── PolicyNotAuthorized
    ├── NovaError ── NovaTimeout (a Nova call failed; carries Nova's status)
    └── recovery outcomes: SkipRecovery, RecoveryFailure, ReservedHostsUnavailable, ...
"""

from __future__ import annotations

from typing import Any


class MasakariError(Exception):
    """Base: ``msg_fmt`` is formatted with the keyword arguments."""

    msg_fmt = "An unknown exception occurred."

    def __init__(self, message: str | None = None, **kwargs: Any) -> None:
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError, ValueError):
                message = self.msg_fmt
        self.message = message
        super().__init__(message)

    def format_message(self) -> str:
        return self.message


# --- client errors -------------------------------------------------------------------------


class Invalid(MasakariError):
    msg_fmt = "Bad Request - Invalid Parameters"


class InvalidInput(Invalid):
    msg_fmt = "Invalid input received: %(reason)s"


class ValidationError(Invalid):
    msg_fmt = "%(detail)s"


class DrillsDisabled(Invalid):
    msg_fmt = "Fire drills are off: set [drill] enabled = true on masakari-api and masakari-engine."


class DrillRefused(Invalid):
    msg_fmt = "Drill refused: %(reason)s"


class MalformedRequestBody(Invalid):
    msg_fmt = "Malformed message body: %(reason)s"


class MalformedURL(Invalid):
    msg_fmt = (
        "Malformed request URL: URL's project_id '%(project_id)s' doesn't match Context's "
        "project_id '%(context_project_id)s'"
    )


class InvalidContentType(Invalid):
    msg_fmt = "Invalid content type %(content_type)s."


class InvalidSortKey(Invalid):
    msg_fmt = "Sort key supplied was not valid."


class InvalidAPIVersionString(Invalid):
    msg_fmt = (
        "API Version String %(version)s is of invalid format. Must be of format MajorNum.MinorNum."
    )


class InvalidGlobalAPIVersion(Invalid):
    msg_fmt = (
        "Version %(req_ver)s is not supported by the API. Minimum is %(min_ver)s and "
        "maximum is %(max_ver)s."
    )


class DuplicateNotification(Invalid):
    msg_fmt = "Duplicate notification received for type: %(type)s"


class HostOnMaintenance(Invalid):
    msg_fmt = "Host %(host_name)s is already under maintenance."


class NotificationWithoutVMoves(Invalid):
    msg_fmt = "This notification %(id)s without vm moves."


class NotFound(MasakariError):
    msg_fmt = "Resource could not be found."


class MarkerNotFound(NotFound):
    msg_fmt = "Marker %(marker)s could not be found."


class SegmentNotFound(NotFound):
    msg_fmt = "No failover segment with id %(id)s."


class HostNotFound(NotFound):
    msg_fmt = "No host with id %(id)s."


class HostNotFoundByName(HostNotFound):
    msg_fmt = "Host with name %(host_name)s could not be found."


class HostNotFoundUnderSegment(HostNotFound):
    msg_fmt = "Host '%(host_uuid)s' under failover_segment '%(segment_uuid)s' could not be found."


class NotificationNotFound(NotFound):
    msg_fmt = "No notification with id %(id)s."


class VMoveNotFound(NotFound):
    msg_fmt = "No vm move with id %(id)s."


class DrillNotFound(NotFound):
    msg_fmt = "Drill %(uuid)s of segment %(segment)s could not be found."


class ComputeNotFoundByName(NotFound):
    msg_fmt = "Compute service with name %(compute_name)s could not be found."


class Conflict(MasakariError):
    msg_fmt = "Conflict"


class SegmentExists(Conflict):
    msg_fmt = "Failover segment with name %(name)s already exists."


class HostExists(Conflict):
    msg_fmt = "Host with name %(name)s already exists."


class SegmentInUse(Conflict):
    msg_fmt = "Failover segment %(uuid)s can't be updated as it is in-use to process notifications."


class HostInUse(Conflict):
    msg_fmt = "Host %(uuid)s can't be updated as it is in-use to process notifications."


class DrillHostBusy(Conflict):
    msg_fmt = "Host %(host)s is busy: %(why)s."


class Forbidden(MasakariError):
    msg_fmt = "Forbidden"


class PolicyNotAuthorized(Forbidden):
    msg_fmt = "Policy doesn't allow %(action)s to be performed."


# --- Nova ------------------------------------------------------------------------------------


class NovaError(MasakariError):
    """A Nova call failed. ``status`` is Nova's HTTP status, None for a transport error."""

    msg_fmt = "Error while requesting %(service)s API."

    def __init__(self, message: str | None = None, status: int | None = None, **kwargs: Any):
        self.status = status
        super().__init__(message, **kwargs)


class NovaTimeout(NovaError):
    msg_fmt = "Timeout while requesting %(service)s API."


class PlacementUnavailable(NovaError):
    """Placement could not be read (not in the catalog, unreachable, or it refused)."""

    msg_fmt = "Cannot read Placement: %(reason)s"


# --- recovery outcomes -------------------------------------------------------------------------


class SkipRecovery(MasakariError):
    """Nothing to do: the notification ends ``finished`` with the tasks REVERTED."""

    msg_fmt = "Skipping execution of recovery workflow."


class SkipHostRecovery(SkipRecovery):
    msg_fmt = "Skipping execution of host recovery workflow."


class SkipInstanceRecovery(SkipRecovery):
    msg_fmt = "Skipping execution of instance recovery workflow."


class IgnoreInstanceRecovery(MasakariError):
    msg_fmt = "Instance recovery is ignored."


class RecoveryFailure(MasakariError):
    msg_fmt = "Failed to execute recovery workflow."


class HostRecoveryFailure(RecoveryFailure):
    msg_fmt = "Failed to execute host recovery."


class InstanceRecoveryFailure(RecoveryFailure):
    msg_fmt = "Failed to execute instance recovery workflow."


class ProcessRecoveryFailure(RecoveryFailure):
    msg_fmt = "Failed to execute process recovery workflow."


class ReservedHostsUnavailable(MasakariError):
    msg_fmt = "No reserved_hosts available for evacuation."


class LockAlreadyAcquired(MasakariError):
    msg_fmt = "Lock is already acquired on %(resource)s."


class InstanceEvacuateFailed(MasakariError):
    msg_fmt = "Failed to evacuate instance %(instance_uuid)s"


class InvalidConfiguration(MasakariError):
    msg_fmt = "Configuration is Invalid."
