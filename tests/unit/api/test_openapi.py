"""docs/openapi.yaml describes every operation the route table implements, and no other."""

from __future__ import annotations

import os
import re

import yaml

from masakari.api import router

OPENAPI = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "openapi.yaml")
METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}


def _shape(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path)


def test_openapi_matches_the_route_table() -> None:
    with open(OPENAPI) as fh:
        document = yaml.safe_load(fh)
    documented = {
        (method.upper(), _shape(path))
        for path, item in document["paths"].items()
        if path.startswith("/v1")
        for method in item
        if method in METHODS
    }
    implemented = {
        (method, _shape("/v1" + path))
        for path, methods in router.ROUTES.items()
        if path != "/"
        for method, target in methods.items()
        if callable(target) or isinstance(target, router.Since)
    }
    assert documented == implemented
