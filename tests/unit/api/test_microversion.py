"""Microversions: the supported range and the OpenStack-API-Version header rules."""

from __future__ import annotations

import pytest

import masakari.conf
from masakari import exception
from masakari.api import microversion


def test_versions_are_ascending_and_cover_min_to_max() -> None:
    parsed = [microversion.parse_string(v) for v, _ in microversion.VERSIONS]
    assert parsed == sorted(parsed) and len(set(parsed)) == len(parsed)
    assert parsed[0] == microversion.MIN_VERSION == (1, 0)
    assert parsed[-1] == microversion.MAX_VERSION == (1, 10)
    assert microversion.REFERENCE_MAX == "1.3"


def test_served_maximum_follows_the_option() -> None:
    headers = {"OpenStack-API-Version": "instance-ha latest"}
    default = masakari.conf.for_tests()
    raised = masakari.conf.for_tests(api_max_microversion="1.4")
    assert microversion.enabled_max(default) == (1, 3)
    assert microversion.from_headers(headers, microversion.enabled_max(default)) == (1, 3)
    assert microversion.from_headers(headers, microversion.enabled_max(raised)) == (1, 4)
    with pytest.raises(microversion.UnsupportedVersion):
        microversion.from_headers({"OpenStack-API-Version": "instance-ha 1.4"}, (1, 3))


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, (1, 0)),
        ("instance-ha 1.2", (1, 2)),
        ("instance-ha latest", (1, 3)),
        ("INSTANCE-HA 1.1", (1, 1)),
        ("  instance-ha    1.2  ", (1, 2)),
        ("compute 2.95", (1, 0)),
        ("instance-ha", (1, 0)),
        ("compute 2.1, instance-ha 1.2", (1, 2)),
        ("instance-ha 1.1, instance-ha 1.3", (1, 3)),
    ],
)
def test_header_parsing(header: str | None, expected: tuple[int, int]) -> None:
    headers = {} if header is None else {"OpenStack-API-Version": header}
    assert microversion.from_headers(headers) == expected


@pytest.mark.parametrize(
    "text", ["LATEST", "0.9", "1.01", "01.1", "1", "1.1.1", "one.two", "-1.0", "v1.3"]
)
def test_malformed_versions_are_400(text: str) -> None:
    with pytest.raises(exception.InvalidAPIVersionString) as raised:
        microversion.from_headers({"OpenStack-API-Version": f"instance-ha {text}"})
    assert raised.value.format_message() == (
        f"API Version String {text} is of invalid format. Must be of format MajorNum.MinorNum."
    )


def test_comma_inside_the_version_splits_the_entry() -> None:
    # "instance-ha 1,2" is two entries: "instance-ha 1" and "2" (microversion-parse).
    with pytest.raises(exception.InvalidAPIVersionString, match="String 1 is"):
        microversion.from_headers({"OpenStack-API-Version": "instance-ha 1,2"})


@pytest.mark.parametrize("text", ["1.4", "2.0", "1.10"])
def test_out_of_range_is_406_with_the_reference_message(text: str) -> None:
    with pytest.raises(microversion.UnsupportedVersion) as raised:
        microversion.from_headers({"OpenStack-API-Version": f"instance-ha {text}"})
    assert raised.value.format_message() == (
        f"Version {text} is not supported by the API. Minimum is 1.0 and maximum is 1.3."
    )


def test_select_takes_the_newest_choice_not_above_the_version() -> None:
    choices = {"1.0": "a", "1.2": "b"}
    assert [microversion.select(v, choices) for v in [(1, 0), (1, 1), (1, 2), (1, 3)]] == [
        "a",
        "a",
        "b",
        "b",
    ]


def test_header_text_names_the_service_type() -> None:
    assert microversion.header_text((1, 2)) == "instance-ha 1.2"
