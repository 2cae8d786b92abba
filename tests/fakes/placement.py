"""Placement, as the Nova simulator's catalog offers it under ``/placement``.

One resource provider per compute service (named after its hypervisor, as nova-compute names
its compute-node provider), with VCPU, MEMORY_MB and DISK_GB inventories from the hypervisor's
size; one consumer per server, whose allocations follow the server: boots allocate on their
host, an accepted evacuation claims on its destination, and a finished one frees the source.

The HTTP side speaks the real API (placement-api-ref) for the reads masakari makes:
``GET /``, ``/resource_providers[?name=|resources=]``, ``/resource_providers/{uuid}``,
``.../inventories``, ``.../usages``, ``/allocations/{consumer}`` and
``/allocation_candidates?resources=``; microversions come in the ``OpenStack-API-Version:
placement X.Y`` header and are echoed back. The one write masakari makes, ``PUT
.../inventories/{resource_class}`` (held failover room), is checked as Placement checks it:
the provider's generation (409 ``placement.concurrent_update`` when it moved), every field
not sent reset to its default, reserved at most total (1.26+), and a new generation.

A hypervisor added without a size is practically unlimited, so that everything written
before Placement existed here behaves as it did.
"""

from __future__ import annotations

import dataclasses
import math
import uuid
from collections.abc import Mapping
from typing import Any

PREFIX = "/placement"
MIN_VERSION = (1, 0)
MAX_VERSION = (1, 39)
RESOURCE_CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")
# "Unlimited" hypervisors: far beyond any scenario's needs.
UNLIMITED = {"VCPU": 1_000_000, "MEMORY_MB": 1_000_000_000, "DISK_GB": 1_000_000_000}


@dataclasses.dataclass(frozen=True)
class Flavor:
    """The flavor of a server, as Nova embeds it in the server (2.47+)."""

    name: str = "m1.tiny"
    vcpus: int = 1
    ram: int = 512
    disk: int = 1
    ephemeral: int = 0
    swap: int = 0

    def resources(self) -> dict[str, int]:
        """What nova-compute allocates for it: swap (MB) counts in DISK_GB, rounded up."""
        return {
            "VCPU": self.vcpus,
            "MEMORY_MB": self.ram,
            "DISK_GB": self.disk + self.ephemeral + math.ceil(self.swap / 1024),
        }

    def view(self) -> dict[str, Any]:
        return {
            "vcpus": self.vcpus,
            "ram": self.ram,
            "disk": self.disk,
            "ephemeral": self.ephemeral,
            "swap": self.swap,
            "original_name": self.name,
            "extra_specs": {},
        }


@dataclasses.dataclass
class Inventory:
    total: int
    reserved: int = 0
    allocation_ratio: float = 1.0
    min_unit: int = 1
    max_unit: int | None = None  # None: total
    step_size: int = 1

    @property
    def capacity(self) -> int:
        return int((self.total - self.reserved) * self.allocation_ratio)

    def view(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "reserved": self.reserved,
            "min_unit": self.min_unit,
            "max_unit": self.total if self.max_unit is None else self.max_unit,
            "step_size": self.step_size,
            "allocation_ratio": self.allocation_ratio,
        }


@dataclasses.dataclass
class Provider:
    uuid: str
    name: str
    inventories: dict[str, Inventory]
    generation: int = 1


class PlacementFault(Exception):
    def __init__(self, status: int, detail: str, code: str = "placement.undefined_code") -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.code = code


_TITLES = {
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    409: "Conflict",
}


def provider_uuid(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"nova-sim:resource-provider:{name}"))


class Placement:
    """The providers and allocations; the caller (the Nova simulator) holds its lock."""

    def __init__(self) -> None:
        self.providers: dict[str, Provider] = {}
        # consumer uuid -> provider uuid -> resource class -> amount
        self.allocations: dict[str, dict[str, dict[str, int]]] = {}
        self.consumers: dict[str, tuple[str, str]] = {}
        self.calls: list[tuple[str, str, str | None]] = []

    # --- the model -------------------------------------------------------------------------

    def add_provider(
        self,
        name: str,
        *,
        vcpus: int | None = None,
        memory_mb: int | None = None,
        disk_gb: int | None = None,
        allocation_ratios: Mapping[str, float] | None = None,
        reserved: Mapping[str, int] | None = None,
    ) -> str:
        sizes = {"VCPU": vcpus, "MEMORY_MB": memory_mb, "DISK_GB": disk_gb}
        ratios = dict(allocation_ratios or {})
        held = dict(reserved or {})
        inventories = {
            rc: Inventory(
                UNLIMITED[rc] if size is None else size, held.get(rc, 0), ratios.get(rc, 1.0)
            )
            for rc, size in sizes.items()
        }
        rp = Provider(provider_uuid(name), name, inventories)
        self.providers[rp.uuid] = rp
        return rp.uuid

    def by_name(self, name: str | None) -> Provider | None:
        return self.providers.get(provider_uuid(name)) if name else None

    def usages(self, rp_uuid: str) -> dict[str, int]:
        used = dict.fromkeys(self.providers[rp_uuid].inventories, 0)
        for allocs in self.allocations.values():
            for rc, amount in allocs.get(rp_uuid, {}).items():
                used[rc] = used.get(rc, 0) + amount
        return used

    def fits(self, name: str | None, resources: Mapping[str, int]) -> bool:
        rp = self.by_name(name)
        if rp is None:
            return False
        used = self.usages(rp.uuid)
        return all(
            rc in rp.inventories and used.get(rc, 0) + amount <= rp.inventories[rc].capacity
            for rc, amount in resources.items()
            if amount
        )

    def allocate(
        self,
        consumer: str,
        name: str | None,
        resources: Mapping[str, int],
        project_id: str = "",
        user_id: str = "",
    ) -> None:
        """Adds the consumer's allocation on ``name``'s provider (an evacuation holds two)."""
        rp = self.by_name(name)
        if rp is None:
            return
        self.allocations.setdefault(consumer, {})[rp.uuid] = dict(resources)
        self.consumers.setdefault(consumer, (project_id, user_id))
        rp.generation += 1

    def free(self, consumer: str, name: str | None) -> None:
        rp = self.by_name(name)
        if rp is not None and self.allocations.get(consumer, {}).pop(rp.uuid, None) is not None:
            rp.generation += 1

    # --- HTTP ------------------------------------------------------------------------------

    def handle(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]],
        header: str | None,
        body: Any = None,
    ) -> tuple[int, Any, dict[str, str]]:
        """One request: (status, body, headers); ``path`` without the /placement prefix."""
        version = MIN_VERSION
        headers: dict[str, str] = {"vary": "openstack-api-version"}
        try:
            if header:
                version = _parse_version(header)
            headers["openstack-api-version"] = "placement {}.{}".format(*version)
            self.calls.append((method, path, "{}.{}".format(*version) if header else None))
            parts = [p for p in path.split("/") if p]
            if method == "PUT" and len(parts) == 4 and parts[2] == "inventories":
                return (*self._put_inventory(parts[1], parts[3], body, version), headers)
            if method != "GET":
                raise PlacementFault(405, f"The method {method} is not allowed for this resource.")
            status, body = self._get(parts, dict(query), version)
            return status, body, headers
        except PlacementFault as fault:
            return fault.status, _error(fault), headers

    def _get(
        self, parts: list[str], q: dict[str, str], version: tuple[int, int]
    ) -> tuple[int, Any]:
        if not parts:
            return 200, {
                "versions": [
                    {
                        "id": "v1.0",
                        "max_version": "{}.{}".format(*MAX_VERSION),
                        "min_version": "{}.{}".format(*MIN_VERSION),
                        "status": "CURRENT",
                        "links": [{"rel": "self", "href": ""}],
                    }
                ]
            }
        if parts == ["resource_providers"]:
            found = list(self.providers.values())
            if "name" in q:
                found = [rp for rp in found if rp.name == q["name"]]
            if "resources" in q:
                if version < (1, 4):
                    raise PlacementFault(400, "Invalid query string parameters: resources")
                wanted = _resources(q["resources"])
                found = [rp for rp in found if self.fits(rp.name, wanted)]
            return 200, {"resource_providers": [self._rp_view(rp) for rp in found]}
        if parts[0] == "resource_providers" and len(parts) in (2, 3):
            rp = self.providers.get(parts[1])
            if rp is None:
                raise PlacementFault(404, f"No resource provider with uuid {parts[1]} found")
            if len(parts) == 2:
                return 200, self._rp_view(rp)
            if parts[2] == "inventories":
                return 200, {
                    "resource_provider_generation": rp.generation,
                    "inventories": {rc: inv.view() for rc, inv in rp.inventories.items()},
                }
            if parts[2] == "usages":
                return 200, {
                    "resource_provider_generation": rp.generation,
                    "usages": self.usages(rp.uuid),
                }
        if parts[0] == "allocations" and len(parts) == 2:
            allocs = self.allocations.get(parts[1], {})
            body: dict[str, Any] = {
                "allocations": {
                    rp: {"generation": self.providers[rp].generation, "resources": dict(res)}
                    for rp, res in allocs.items()
                }
            }
            if version >= (1, 12) and allocs:
                body["project_id"], body["user_id"] = self.consumers.get(parts[1], ("", ""))
            return 200, body
        if parts == ["allocation_candidates"]:
            if version < (1, 10):
                raise PlacementFault(404, "The resource could not be found.")
            if "resources" not in q:
                raise PlacementFault(400, "'resources' is a required property")
            return 200, self._candidates(_resources(q["resources"]), q, version)
        raise PlacementFault(404, "The resource could not be found.")

    def _put_inventory(
        self, rp_uuid: str, rc: str, body: Any, version: tuple[int, int]
    ) -> tuple[int, Any]:
        rp = self.providers.get(rp_uuid)
        if rp is None:
            raise PlacementFault(404, f"No resource provider with uuid {rp_uuid} found")
        if not isinstance(body, dict) or "total" not in body:
            raise PlacementFault(400, "'total' is a required property")
        if "resource_provider_generation" not in body:
            raise PlacementFault(400, "'resource_provider_generation' is a required property")
        if body["resource_provider_generation"] != rp.generation:
            raise PlacementFault(
                409,
                "resource provider generation conflict",
                code="placement.concurrent_update",
            )
        total, reserved = int(body["total"]), int(body.get("reserved", 0))
        if reserved > total or (reserved == total and version < (1, 26)):
            raise PlacementFault(
                400,
                f"Invalid inventory for '{rc}' on resource provider '{rp_uuid}'. The reserved "
                "value is greater than total.",
            )
        rp.inventories[rc] = Inventory(
            total,
            reserved,
            float(body.get("allocation_ratio", 1.0)),
            int(body.get("min_unit", 1)),
            int(body.get("max_unit", 2147483647)),
            int(body.get("step_size", 1)),
        )
        rp.generation += 1
        return 200, {"resource_provider_generation": rp.generation, **rp.inventories[rc].view()}

    def set_reserved(self, name: str, rc: str, reserved: int) -> None:
        """Another writer (nova-compute refreshing its inventory) sets a reserved amount."""
        rp = self.by_name(name)
        assert rp is not None
        rp.inventories[rc].reserved = reserved
        rp.generation += 1

    def _candidates(
        self, wanted: dict[str, int], q: dict[str, str], version: tuple[int, int]
    ) -> dict[str, Any]:
        found = [rp for rp in self.providers.values() if self.fits(rp.name, wanted)]
        if "in_tree" in q and version >= (1, 31):
            found = [rp for rp in found if rp.uuid == q["in_tree"]]
        if "limit" in q:
            found = found[: int(q["limit"])]
        requests = []
        for rp in found:
            if version >= (1, 12):
                allocations: Any = {rp.uuid: {"resources": dict(wanted)}}
            else:
                allocations = [{"resource_provider": {"uuid": rp.uuid}, "resources": dict(wanted)}]
            requests.append({"allocations": allocations})
        summaries: dict[str, Any] = {}
        for rp in found:
            used = self.usages(rp.uuid)
            summaries[rp.uuid] = {
                "resources": {
                    rc: {"capacity": inv.capacity, "used": used.get(rc, 0)}
                    for rc, inv in rp.inventories.items()
                },
                "traits": [],
                "parent_provider_uuid": None,
                "root_provider_uuid": rp.uuid,
            }
        return {"allocation_requests": requests, "provider_summaries": summaries}

    @staticmethod
    def _rp_view(rp: Provider) -> dict[str, Any]:
        base = f"{PREFIX}/resource_providers/{rp.uuid}"
        return {
            "uuid": rp.uuid,
            "name": rp.name,
            "generation": rp.generation,
            "parent_provider_uuid": None,
            "root_provider_uuid": rp.uuid,
            "links": [
                {"rel": "self", "href": base},
                {"rel": "inventories", "href": base + "/inventories"},
                {"rel": "usages", "href": base + "/usages"},
            ],
        }


def _parse_version(header: str) -> tuple[int, int]:
    words = header.split()
    if len(words) != 2 or words[0].lower() != "placement":
        return MIN_VERSION
    if words[1] == "latest":
        return MAX_VERSION
    try:
        major, minor = (int(x) for x in words[1].split("."))
    except ValueError as exc:
        raise PlacementFault(400, f"invalid version string: {words[1]}") from exc
    if not MIN_VERSION <= (major, minor) <= MAX_VERSION:
        raise PlacementFault(
            406,
            f"Unacceptable version header: {words[1]}",
        )
    return major, minor


def _resources(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in text.split(","):
        rc, _, amount = item.partition(":")
        try:
            out[rc.strip()] = int(amount)
        except ValueError as exc:
            raise PlacementFault(
                400,
                f"Badly formed resources parameter. Expected resources query string "
                f"parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: {text}.",
            ) from exc
    return out


def _error(fault: PlacementFault) -> dict[str, Any]:
    return {
        "errors": [
            {
                "status": fault.status,
                "title": _TITLES.get(fault.status, "Error"),
                "detail": fault.detail,
                "request_id": "req-" + str(uuid.uuid4()),
                "code": fault.code,
            }
        ]
    }
