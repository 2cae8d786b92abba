"""The reference documentation says what the code does: every option masakari registers is
in docs/configuration.md, every policy rule in docs/policy.md, every microversion and every
served route in docs/api.md and docs/openapi.yaml."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from oslo_config import cfg

from masakari import policies
from masakari.api import microversion, router
from masakari.conf import opts
from masakari.policies import metrics as metrics_policies

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _text(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _options() -> list[tuple[str, str]]:
    found = []
    for group, options in [*opts.list_opts(), *opts.list_recovery_workflow_opts()]:
        name = group.name if isinstance(group, cfg.OptGroup) else group
        found += [(name, opt.name) for opt in options]
    return found


@pytest.mark.parametrize(("group", "option"), _options())
def test_every_option_is_in_configuration_md(group: str, option: str) -> None:
    text = _text("configuration.md")
    # Named as `option` (in a table row or in prose) and its group named somewhere.
    assert re.search(rf"`(\[{re.escape(group)}\] )?{re.escape(option)}`", text), (group, option)
    assert f"[{group}]" in text or group == "DEFAULT", group


def _rules() -> list[str]:
    return [rule.name for rule in [*policies.list_rules(), *metrics_policies.RULES]]


@pytest.mark.parametrize("rule", _rules())
def test_every_policy_rule_is_in_policy_md(rule: str) -> None:
    assert f"`{rule}`" in _text("policy.md"), rule


@pytest.mark.parametrize("version", [v for v, _ in microversion.VERSIONS])
def test_every_microversion_is_in_api_md_and_openapi(version: str) -> None:
    assert re.search(rf"^\| {re.escape(version)} \|", _text("api.md"), re.MULTILINE) or (
        version == "1.0"
    ), version
    assert version in _text("openapi.yaml"), version


def test_the_documented_maximum_is_the_served_one() -> None:
    newest = microversion.VERSIONS[-1][0]
    api = _text("api.md")
    assert f"`VERSIONS` 1.0-{newest}" in api
    assert f"api_max_microversion = {newest}" in api


def _served_routes() -> list[str]:
    """Every path with a handler (not a mapper action answering 405), as openapi names it."""
    served = []
    for path, methods in router.ROUTES.items():
        if path in ("", "/") or all(isinstance(t, str) for t in methods.values()):
            continue
        served.append(path)
    return served


def _openapi_form(path: str) -> str:
    # The route table names the last parameter {id}; openapi names each after its object.
    parts = path.strip("/").split("/")
    out = []
    for i, part in enumerate(parts):
        if part == "{id}":
            owner = parts[i - 1]
            part = {
                "segments": "{segment_id}",
                "hosts": "{host_id}",
                "notifications": "{notification_id}",
                "vmoves": "{vmove_id}",
                "extensions": "{alias}",
                "versions": "{version_id}",
                "quarantines": "{quarantine_id}",
            }[owner]
        out.append(part)
    return "/v1/" + "/".join(out)


@pytest.mark.parametrize("path", _served_routes())
def test_every_served_route_is_in_api_md_and_openapi(path: str) -> None:
    documented = _openapi_form(path)
    spec = yaml.safe_load(_text("openapi.yaml"))
    assert documented in spec["paths"], documented
    served = {m.lower() for m, t in router.ROUTES[path].items() if not isinstance(t, str)}
    assert served <= set(spec["paths"][documented]), (documented, served)
    # api.md names the route with any parameter spelling, or by its relative form.
    pattern = re.sub(r"\\\{\w+\\\}", r"\\{\\w+\\}", re.escape(documented.removeprefix("/v1")))
    assert re.search(pattern, _text("api.md")), documented
