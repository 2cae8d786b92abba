"""The host fencing file ([fencing]/config_file): which drivers fence which host.

A YAML file, read and checked once when masakari-engine starts (docs/configuration.md,
"The fencing file")::

    version: 1
    hosts:
      compute-01:                     # an exact host name (as Nova and masakari name it)
        - driver: ipmi
          address: 10.0.0.11
          username: admin
          password: "s3cret"
      "rack2-*":                      # an fnmatch pattern, tried in file order
        - driver: kdump
          address: "{host}.mgmt"      # {host}: the host's name
        - driver: redfish
          address: "https://{host}-bmc.mgmt"
          username: fence
          password: "s3cret"
    segments:
      segment-a:                      # a segment's name or uuid: its hosts' default
        - driver: agent
          agent: fence_ipmilan
          address: "{host}-ipmi.mgmt"
          username: admin
          password: "s3cret"
          args: {lanplus: 1}

A host's list is looked up by its exact name, then by the patterns in file order, then by
its segment's uuid and name; none of them: the host has no driver (``[fencing]
unfenced_hosts`` says what then). An empty list says "no driver" for that host or pattern
(an exception to a pattern or a segment default). Errors name the file and the entry, never
a value: a secret of the wrong type is not printed either.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import stat
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import yaml

from masakari.fencing import base, ceph, lease, redfish

LOG = logging.getLogger(__name__)

__all__ = ["FencingFile", "FencingFileError", "HOST_PLACEHOLDER"]

HOST_PLACEHOLDER = "{host}"
_GLOB = frozenset("*?[")
# A driver call may take this long at most: past it a BMC is not coming back within a fence.
MAX_TIMEOUT = 300
# Agent arguments that the entry's own keys set (address, port, username, password) or that
# masakari sets itself (action): giving them in ``args`` is an error, not a silent override.
_AGENT_RESERVED = frozenset(
    {"action", "ip", "ipaddr", "ipport", "username", "login", "password", "passwd", "agent"}
)


class FencingFileError(ValueError):
    """The fencing file cannot be used: the message names the file and the entry."""


_SCALAR = {"type": ["string", "integer", "number", "boolean"]}
_COMMON = {
    "driver": {"enum": list(base.TYPES)},
    "name": {"type": "string", "minLength": 1, "maxLength": 64},
    "address": {"type": "string", "minLength": 1, "maxLength": 255},
    "port": {"type": "integer", "minimum": 1, "maximum": 65535},
    "username": {"type": "string", "minLength": 1, "maxLength": 255},
    "password": {"type": "string", "maxLength": 255},
    "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIMEOUT},
}


def _entry_schema(required: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {**_COMMON, **extra},
        "required": ["driver", *required],
        "additionalProperties": False,
    }


_DRIVER_SCHEMAS: dict[str, dict[str, Any]] = {
    base.IPMI: _entry_schema(["address", "username", "password"]),
    base.REDFISH: _entry_schema(
        ["address", "username", "password"],
        # The system's id or path (/redfish/v1/Systems/1); unset: the service's only system.
        system={"type": "string", "minLength": 1},
        # TLS: true (the system's CAs), false (no check), or a CA bundle's path.
        verify={"type": ["boolean", "string"], "minLength": 1},
        # An http:// address is refused without it: basic authentication sends the
        # password with every request, in clear text over http.
        allow_http={"type": "boolean"},
    ),
    base.AGENT: _entry_schema(
        ["agent"],
        agent={
            "type": "string",
            "pattern": r"^(/\S+/)?fence_[A-Za-z0-9_]+$",
            "description": "must be a fence agent's name (fence_...) or absolute path",
        },
        args={
            "type": "object",
            "propertyNames": {
                "pattern": r"^[a-z][a-z0-9_-]*$",
                "description": "names must be lower-case words (a-z, 0-9, _ and -)",
            },
            "additionalProperties": _SCALAR,
        },
    ),
    # The host's kdump messages come from ``address`` (an IP address or a name resolving to
    # it); ``wait``: seconds to wait for them when they have not come yet; ``messages``: how
    # many must come, ``interval`` (fence_kdump_send's -i) apart.
    base.KDUMP: {
        "type": "object",
        "properties": {key: _COMMON[key] for key in ("driver", "name", "address")}
        | {
            "wait": {"type": "number", "minimum": 0, "maximum": MAX_TIMEOUT},
            "messages": {"type": "integer", "minimum": 1, "maximum": 10},
            "interval": {"type": "number", "exclusiveMinimum": 0, "maximum": 60},
        },
        "required": ["driver", "address"],
        "additionalProperties": False,
    },
    # The host's slot on a shared device (masakari.fencing.lease): ``path``, the name in it
    # (``host``, default the host's), the agent's ``interval`` and ``watchdog_timeout``.
    base.LEASE: {
        "type": "object",
        "properties": {key: _COMMON[key] for key in ("driver", "name", "timeout")}
        | {
            "path": {"type": "string", "minLength": 1, "maxLength": 255},
            "host": {"type": "string", "minLength": 1, "maxLength": 255},
            "interval": {"type": "number", "exclusiveMinimum": 0, "maximum": 60},
            "misses": {"type": "integer", "minimum": 1, "maximum": 100},
            "watchdog_timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 120},
        },
        "required": ["driver", "path", "watchdog_timeout"],
        "additionalProperties": False,
    },
    # The host's client IPs (or names) on the Ceph public network, and the cluster's
    # ceph.conf and cephx user (masakari.fencing.ceph).
    base.CEPH: {
        "type": "object",
        "properties": {key: _COMMON[key] for key in ("driver", "name", "address", "timeout")}
        | ceph.KEYS,
        "required": ["driver"],
        "if": {"not": {"required": ["address"]}},
        "then": {"required": ["addresses"]},
        "additionalProperties": False,
    },
}

_FILE_SCHEMA = {
    "type": "object",
    "properties": {
        "version": {"const": 1},
        "hosts": {"type": "object", "additionalProperties": {"type": "array"}},
        "segments": {"type": "object", "additionalProperties": {"type": "array"}},
    },
    "additionalProperties": False,
}


class _Loader(yaml.SafeLoader):
    """Safe YAML that refuses a key given twice in one mapping (PyYAML keeps the last one,
    which in a fencing file would silently drop a host's drivers or a credential)."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
        if isinstance(key, (str, int, float, bool)) and key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(None, None, f"key {key!r} given twice", mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


class _Entry:
    """One driver entry as the file gives it, {host} not yet replaced."""

    __slots__ = ("type", "name", "address", "port", "username", "password", "timeout", "options")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.type: str = raw["driver"]
        self.name: str = raw.get("name", "")
        self.address: str | None = raw.get("address")
        self.port: int | None = raw.get("port")
        self.username: str | None = raw.get("username")
        self.password: str | None = raw.get("password")
        self.timeout = float(raw.get("timeout", base.DriverSpec.timeout))
        options: dict[str, str] = {}
        if self.type == base.REDFISH:
            if "system" in raw:
                options["system"] = raw["system"]
            if "verify" in raw:
                options["verify"] = _option_text(raw["verify"])
        elif self.type == base.AGENT:
            options["agent"] = raw["agent"]
            for key, value in raw.get("args", {}).items():
                options[key] = _option_text(value)
        elif self.type == base.KDUMP:
            for key in ("wait", "messages", "interval"):
                if key in raw:
                    options[key] = _option_text(raw[key])
        elif self.type == base.LEASE:
            self.address = raw["path"]
            options = lease.entry_options(raw)
            self.timeout = float(options.pop("timeout"))
        elif self.type == base.CEPH:
            options = ceph.options(raw)
        self.options = options

    def spec_for(self, host: str) -> base.DriverSpec:
        def fill(value: str | None) -> str | None:
            return None if value is None else value.replace(HOST_PLACEHOLDER, host)

        # Every string of the entry, the label included: a pattern's drivers are then told
        # apart by host in evidence and logs.
        return base.DriverSpec(
            type=self.type,
            address=fill(self.address),
            port=self.port,
            username=fill(self.username),
            password=fill(self.password),
            timeout=self.timeout,
            options={
                key: value.replace(HOST_PLACEHOLDER, host) for key, value in self.options.items()
            },
            name=self.name.replace(HOST_PLACEHOLDER, host),
        )


def _option_text(value: Any) -> str:
    # Agents read booleans as 1/0 on stdin; YAML's true/false become that.
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


class FencingFile:
    """The fencing file, loaded and checked: :meth:`load`, then :meth:`drivers_for`."""

    def __init__(
        self,
        path: str,
        hosts: Mapping[str, list[_Entry]],
        segments: Mapping[str, list[_Entry]],
    ) -> None:
        self.path = path
        self._hosts = dict(hosts)
        self._exact = {key: value for key, value in hosts.items() if not _GLOB & set(key)}
        # Python dicts keep the file's order: patterns are tried in it.
        self._patterns = [(key, value) for key, value in hosts.items() if _GLOB & set(key)]
        self._segments = dict(segments)

    @classmethod
    def load(cls, path: str) -> FencingFile:
        """Read and check the file; :class:`FencingFileError` says what is wrong and where."""
        try:
            with open(path, encoding="utf-8") as f:
                mode = os.fstat(f.fileno()).st_mode
                text = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise FencingFileError(
                f"fencing file {path}: cannot be read: {_os_reason(exc)}"
            ) from None
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            LOG.warning(
                "fencing file %s is readable or writable by users other than its owner "
                "(mode %s): it holds BMC credentials; chmod 600 it, owned by masakari-engine's "
                "user",
                path,
                oct(stat.S_IMODE(mode)),
            )
        return cls.parse(text, path)

    @classmethod
    def parse(cls, text: str, path: str = "<fencing file>") -> FencingFile:
        """Check ``text`` as the content of the file ``path`` (named in errors)."""
        try:
            data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
        except yaml.MarkedYAMLError as exc:
            raise FencingFileError(f"fencing file {path}: {_yaml_reason(exc)}") from None
        except yaml.YAMLError:
            raise FencingFileError(f"fencing file {path}: not valid YAML") from None
        if data is None:
            raise FencingFileError(f"fencing file {path}: empty (give hosts: or segments:)")
        _validate(data, _FILE_SCHEMA, path, "the file")
        if not data.get("hosts") and not data.get("segments"):
            raise FencingFileError(
                f"fencing file {path}: neither hosts: nor segments: has an entry"
            )
        hosts = {
            str(key): _entries(value, path, f"hosts[{str(key)!r}]")
            for key, value in (data.get("hosts") or {}).items()
        }
        segments = {
            str(key): _entries(value, path, f"segments[{str(key)!r}]")
            for key, value in (data.get("segments") or {}).items()
        }
        for pattern in hosts:
            if _GLOB & set(pattern):
                _check_pattern(pattern, path)
        return cls(path, hosts, segments)

    def drivers_for(
        self,
        host_name: str,
        segment_name: str | None = None,
        segment_uuid: str | None = None,
    ) -> list[base.DriverSpec] | None:
        """The host's escalation list, ``{host}`` filled in; None when the file gives it no
        driver (no entry, or an empty list)."""
        entries = self._lookup(host_name, segment_name, segment_uuid)
        if not entries:
            return None
        return [entry.spec_for(host_name) for entry in entries]

    def entries(self) -> list[tuple[str, base.DriverSpec]]:
        """Every entry of the file, in file order, as its errors name it
        (``hosts['rack2-*'][1]``), with ``{host}`` filled in for an exact host name and left
        as it is under a pattern or a segment (no host is known there)."""
        found = []
        for section, lists in (("hosts", self._hosts), ("segments", self._segments)):
            for key, entries in lists.items():
                host = key if section == "hosts" and not _GLOB & set(key) else HOST_PLACEHOLDER
                found += [
                    (f"{section}[{key!r}][{index}]", entry.spec_for(host))
                    for index, entry in enumerate(entries)
                ]
        return found

    def hosts_patterns(self) -> list[str]:
        """The host names and patterns the file lists, in file order (for the readiness
        doctor: a host of a segment matching none of these, and whose segment has no
        default, is unfenced)."""
        return list(self._exact) + [pattern for pattern, _ in self._patterns]

    def segments(self) -> list[str]:
        """The segment names and uuids the file gives a default list for."""
        return list(self._segments)

    def __repr__(self) -> str:
        return (
            f"FencingFile({self.path!r}, {len(self._exact) + len(self._patterns)} host "
            f"entries, {len(self._segments)} segment entries)"
        )

    def _lookup(
        self, host: str, segment_name: str | None, segment_uuid: str | None
    ) -> list[_Entry] | None:
        if host in self._exact:
            return self._exact[host]
        for pattern, entries in self._patterns:
            if fnmatch.fnmatchcase(host, pattern):
                return entries
        for key in (segment_uuid, segment_name):
            if key is not None and key in self._segments:
                return self._segments[key]
        return None


def _entries(raw: Any, path: str, where: str) -> list[_Entry]:
    entries = []
    for index, item in enumerate(raw):
        at = f"{where}[{index}]"
        if not isinstance(item, Mapping):
            raise FencingFileError(f"fencing file {path}: {at}: must be a mapping (driver: ...)")
        driver = item.get("driver")
        if driver not in _DRIVER_SCHEMAS:
            raise FencingFileError(
                f"fencing file {path}: {at}: 'driver' must be one of {', '.join(base.TYPES)}"
            )
        at = f"{at} ({driver})"
        _validate(item, _DRIVER_SCHEMAS[driver], path, at)
        if "@" in str(item.get("address", "")):
            raise FencingFileError(
                f"fencing file {path}: {at}: address: no credentials in it (username: and "
                "password: hold them)"
            )
        if driver == base.REDFISH:
            _check_redfish_scheme(item, path, at)
        if driver == base.AGENT:
            reserved = sorted(_AGENT_RESERVED & set(item.get("args", {})))
            if reserved:
                raise FencingFileError(
                    f"fencing file {path}: {at}: args: {', '.join(reserved)} may not be given "
                    "here (address, port, username and password are the entry's own keys; "
                    "masakari sets the action)"
                )
        problem = lease.entry_problem(item) if driver == base.LEASE else None
        if problem:
            raise FencingFileError(f"fencing file {path}: {at}: {problem}")
        entries.append(_Entry(item))
    return entries


def _check_redfish_scheme(item: Mapping[str, Any], path: str, at: str) -> None:
    scheme = urlsplit(redfish.base_url(item["address"])).scheme.lower()
    if scheme == "https":
        return
    if scheme != "http":
        raise FencingFileError(
            f"fencing file {path}: {at}: address: the URL's scheme must be https (or http "
            "with allow_http: true)"
        )
    if not item.get("allow_http"):
        raise FencingFileError(
            f"fencing file {path}: {at}: address: http:// sends the BMC password in clear "
            "text with every request; use https, or set allow_http: true to accept that"
        )
    LOG.warning(
        "fencing file %s: %s: the BMC password travels in clear text (http, allow_http: true)",
        path,
        at,
    )


def _validate(data: Any, schema: Mapping[str, Any], path: str, where: str) -> None:
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(data),
        key=lambda e: list(e.absolute_path),
    )
    if errors:
        raise FencingFileError(f"fencing file {path}: {where}: {_describe(errors[0])}")


def _describe(error: jsonschema.ValidationError) -> str:
    """The error without the offending value (jsonschema's own messages quote it, and it
    may be a password)."""
    at = "".join(
        f"[{part}]" if isinstance(part, int) else (f".{part}" if i else str(part))
        for i, part in enumerate(error.absolute_path)
    )
    prefix = f"{at!s}: " if at else ""
    kind = error.validator
    spec = error.validator_value
    if kind == "type":
        types = spec if isinstance(spec, list) else [spec]
        names: dict[str, str] = {
            "object": "a mapping",
            "array": "a list",
            "string": "a string (quote it)",
            "integer": "an integer",
            "number": "a number",
            "boolean": "true or false",
        }
        return prefix + "must be " + " or ".join(names.get(str(t), str(t)) for t in types)
    if kind == "required":
        missing = [
            key for key in spec if isinstance(error.instance, Mapping) and key not in error.instance
        ]
        return prefix + ", ".join(f"{key!r}" for key in missing) + " is required"
    if kind == "additionalProperties" and isinstance(error.instance, Mapping):
        known = set(error.schema.get("properties", {}))
        unknown = sorted(str(key) for key in error.instance if key not in known)
        return (
            prefix
            + "unknown key(s): "
            + ", ".join(unknown)
            + (f" (known: {', '.join(sorted(known))})" if known else "")
        )
    if kind in ("enum", "const"):
        allowed = spec if isinstance(spec, list) else [spec]
        return prefix + "must be " + " or ".join(repr(v) for v in allowed)
    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        words = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}
        return prefix + f"must be {words[kind]} {spec}"
    if kind in ("minLength", "minItems"):
        return prefix + "must not be empty"
    if kind == "maxLength":
        return prefix + f"must be at most {spec} characters"
    if kind == "pattern":
        return prefix + error.schema.get("description", f"must match {spec}")
    return prefix + f"invalid ({kind})"


def _check_pattern(pattern: str, path: str) -> None:
    # fnmatch accepts any string; an unclosed '[' silently matches only itself.
    if pattern.count("[") != pattern.count("]"):
        raise FencingFileError(
            f"fencing file {path}: hosts[{pattern!r}]: unbalanced [ ] in the pattern"
        )


def _yaml_reason(exc: yaml.MarkedYAMLError) -> str:
    # The line and column, and what the parser expected: never the line's text (its snippet
    # may show a credential).
    mark = exc.problem_mark or exc.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    return f"not valid YAML: {where}{exc.problem or exc.context or 'syntax error'}"


def _os_reason(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return "not UTF-8 text"
