"""Placement as masakari uses it: free capacity of compute hosts, and the one change it
makes, the ``reserved`` amount of an inventory that keeps failover room
(masakari.engine.room, ``[capacity] hold_room``).

The client shares the Nova client's keystoneauth session (one token for both) and finds the
``placement`` service in the catalog with the interface and region Nova is found with.
Errors are :class:`masakari.exception.NovaError` with ``service="Placement"`` (status = the
HTTP status Placement answered, None for a transport failure), so callers treat a Placement
outage as they treat a Nova one: retried by the caller or reported, never taken as "fits".
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from typing import Any

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
from oslo_config import cfg

from masakari import exception
from masakari.compute import nova, retry

# 1.12: allocations as dicts; 1.26: reserved may equal total; 1.31: in_tree.
PLACEMENT_API_VERSION = "1.31"
SERVICE_TYPE = "placement"
RESOURCE_CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")
# What a PUT of one inventory carries besides the generation: a field left out is reset to
# Placement's default, so every one is sent as it was read.
INVENTORY_FIELDS = ("total", "reserved", "min_unit", "max_unit", "step_size", "allocation_ratio")

Resources = dict[str, int]


def flavor_resources(server: Mapping[str, Any]) -> Resources:
    """What nova-compute allocates for a server, from the flavor Nova embeds (2.47+):
    swap (MB) counts in DISK_GB, rounded up."""
    flavor = server.get("flavor") or {}
    return {
        "VCPU": int(flavor.get("vcpus") or 0),
        "MEMORY_MB": int(flavor.get("ram") or 0),
        "DISK_GB": int(flavor.get("disk") or 0)
        + int(flavor.get("ephemeral") or 0)
        + math.ceil(int(flavor.get("swap") or 0) / 1024),
    }


@dataclasses.dataclass
class HostCapacity:
    """A compute host's provider: capacity ((total - reserved) * ratio) and usage per class."""

    name: str
    provider_uuid: str
    capacity: Resources
    used: Resources

    def free(self) -> Resources:
        return {rc: self.capacity[rc] - self.used.get(rc, 0) for rc in self.capacity}

    def fits(self, need: Mapping[str, int]) -> bool:
        free = self.free()
        return all(not amount or free.get(rc, 0) >= amount for rc, amount in need.items())

    def take(self, need: Mapping[str, int]) -> None:
        for rc, amount in need.items():
            self.used[rc] = self.used.get(rc, 0) + amount


@dataclasses.dataclass(frozen=True)
class ProviderInventory:
    """A provider's inventories and usages as read together, with the generation a write
    of its inventories must name (Placement refuses it with 409 once another write came)."""

    name: str
    uuid: str
    generation: int
    inventories: dict[str, dict[str, Any]]
    used: Resources

    def capacity(self, unreserve: Mapping[str, int] | None = None) -> HostCapacity:
        """What the host offers: (total - reserved) * allocation_ratio per class, with
        ``unreserve`` taken off the reserved amounts (room masakari holds, counted as free
        for failover)."""
        back = unreserve or {}
        capacity = {
            rc: int(
                (inv["total"] - max(0, inv.get("reserved", 0) - back.get(rc, 0)))
                * inv.get("allocation_ratio", 1.0)
            )
            for rc, inv in self.inventories.items()
        }
        return HostCapacity(self.name, self.uuid, capacity, dict(self.used))


class GenerationConflict(exception.NovaError):
    """Placement answered 409: the provider changed since it was read."""


def add(total: Resources, need: Mapping[str, int]) -> Resources:
    out = dict(total)
    for rc, amount in need.items():
        out[rc] = out.get(rc, 0) + amount
    return out


def describe(resources: Mapping[str, int]) -> str:
    return ", ".join(f"{rc} {resources[rc]}" for rc in sorted(resources) if resources[rc])


class PlacementClient:
    def __init__(
        self,
        session: ks_session.Session,
        *,
        interface: str = "public",
        region_name: str | None = None,
        timeout: float | None = 60.0,
    ) -> None:
        """Requests go through ``session``'s transport, with the retry policy and connections
        of the Nova client that built it (masakari.compute.retry): every request is a read."""
        self._adapter = ks_adapter.Adapter(
            session,
            service_type=SERVICE_TYPE,
            interface=interface,
            region_name=region_name,
            default_microversion=PLACEMENT_API_VERSION,
        )
        self._timeout = timeout

    @classmethod
    def beside(cls, client: nova.NovaClient, conf: cfg.ConfigOpts) -> PlacementClient:
        """On ``client``'s session (its token, its retry policy and connections), at Nova's
        interface and region."""
        interface = conf.nova_catalog_admin_info.split(":")[2]
        return cls(
            client.session,
            interface=interface,
            region_name=conf.os_region_name,
            timeout=conf.nova_api_timeout,
        )

    def provider(self, name: str) -> dict[str, Any] | None:
        """The resource provider named ``name`` (a compute node's hypervisor hostname)."""
        found = self._get("/resource_providers", [("name", name)])["resource_providers"]
        return dict(found[0]) if found else None

    def inventories(self, provider_uuid: str) -> dict[str, dict[str, Any]]:
        return dict(self._get(f"/resource_providers/{provider_uuid}/inventories")["inventories"])

    def usages(self, provider_uuid: str) -> dict[str, int]:
        return dict(self._get(f"/resource_providers/{provider_uuid}/usages")["usages"])

    def allocation_candidates(
        self, resources: Mapping[str, int], limit: int | None = None
    ) -> dict[str, Any]:
        query = [("resources", ",".join(f"{rc}:{n}" for rc, n in resources.items() if n))]
        if limit is not None:
            query.append(("limit", str(limit)))
        return dict(self._get("/allocation_candidates", query))

    def host_capacity(self, name: str) -> HostCapacity | None:
        """None when Placement has no provider of that name."""
        found = self.inventory(name)
        return None if found is None else found.capacity()

    def inventory(self, name: str) -> ProviderInventory | None:
        """The provider named ``name`` with its inventories, usages and generation (that of
        the inventories read); None when Placement has none of that name."""
        rp = self.provider(name)
        if rp is None:
            return None
        body = self._get(f"/resource_providers/{rp['uuid']}/inventories")
        return ProviderInventory(
            name,
            rp["uuid"],
            int(body["resource_provider_generation"]),
            dict(body["inventories"]),
            self.usages(rp["uuid"]),
        )

    def set_reserved(self, found: ProviderInventory, resource_class: str, reserved: int) -> int:
        """Write ``reserved`` into one inventory of ``found``, every other field as read;
        returns the provider's new generation. GenerationConflict when the provider changed
        since ``found`` was read (nova-compute writing its inventory, say): the caller reads
        again. Safe to send again after an ambiguous failure: a write that landed makes the
        repeat a 409."""
        inv = found.inventories[resource_class]
        body = {
            "resource_provider_generation": found.generation,
            **{k: inv[k] for k in INVENTORY_FIELDS if k in inv},
            "reserved": reserved,
        }
        path = f"/resource_providers/{found.uuid}/inventories/{resource_class}"
        with retry.counted("placement PUT", repeatable=True):
            answer = self._send("PUT", path, None, body)
        return int(answer["resource_provider_generation"])

    def capacities(self, names: Iterable[str]) -> dict[str, HostCapacity | None]:
        return {name: self.host_capacity(name) for name in names}

    def _get(self, path: str, query: list[tuple[str, str]] | None = None) -> Any:
        with retry.counted("placement GET", repeatable=True):
            return self._send("GET", path, query, None)

    def _send(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]] | None,
        body: dict[str, Any] | None,
    ) -> Any:
        try:
            resp = self._adapter.request(
                path,
                method,
                params=query or None,
                json=body,
                raise_exc=False,
                microversion=PLACEMENT_API_VERSION,
                timeout=self._timeout,
            )
        except ks_exc.ClientException as exc:
            raise nova.keystoneauth_error(exc, "Placement") from exc
        if resp.status_code >= 400:
            try:
                detail = resp.json()["errors"][0]["detail"]
            except (ValueError, KeyError, IndexError, TypeError):
                detail = resp.text[:200]
            kind = GenerationConflict if resp.status_code == 409 else exception.NovaError
            raise kind(
                f"Placement answered {method} {path} with {resp.status_code}: {detail}",
                status=resp.status_code,
            )
        try:
            return resp.json()
        except ValueError as exc:
            raise exception.NovaError(
                f"Placement answered {method} {path} with a body that is not JSON.",
                status=resp.status_code,
            ) from exc
