"""The fencing file: lookup order, {host}, strict checks with errors that name the file and
the entry and never a value, and the permission warning."""

from __future__ import annotations

import logging
import os
import pathlib
import textwrap

import pytest

from masakari.fencing import agent, base, ceph, drivers
from masakari.fencing.config import FencingFile, FencingFileError

SECRET = "T0P-s3cret-9f2c"

EXAMPLE = textwrap.dedent(
    f"""\
    version: 1
    hosts:
      compute-01:
        - driver: ipmi
          name: bmc
          address: 10.0.0.11
          port: 6230
          username: admin
          password: "{SECRET}"
          timeout: 4
      "rack2-*":
        - driver: kdump
          address: "{{host}}.mgmt"
          wait: 5
        - driver: redfish
          name: "{{host}}-bmc"
          address: "https://{{host}}-bmc.mgmt"
          username: fence
          password: "{SECRET}-{{host}}"
          system: /redfish/v1/Systems/{{host}}
          verify: false
      "rack2-1*":
        - driver: ipmi
          address: never-used
          username: a
          password: b
      rack2-9: []
    segments:
      1f7a4b36-5a39-4b7e-9a55-0c1f6cbd2b1a:
        - driver: agent
          agent: fence_ipmilan
          address: "{{host}}-ipmi"
          username: admin
          password: "{SECRET}"
          args: {{lanplus: true, power_timeout: 5, method: onoff}}
      segment-a:
        - driver: kdump
          address: 192.0.2.1
    """
)


@pytest.fixture
def fencing() -> FencingFile:
    return FencingFile.parse(EXAMPLE, "/etc/masakari/fencing.yaml")


def test_an_exact_name_comes_first(fencing) -> None:
    (spec,) = fencing.drivers_for("compute-01", "segment-a")
    assert spec == base.DriverSpec(
        type="ipmi",
        address="10.0.0.11",
        port=6230,
        username="admin",
        password=SECRET,
        timeout=4.0,
        options={},
        name="bmc",
    )


def test_patterns_in_file_order_and_host_filled_in(fencing) -> None:
    # rack2-12 matches both patterns: the first in the file wins.
    kdump, redfish = fencing.drivers_for("rack2-12")
    assert (kdump.type, kdump.address, kdump.options) == ("kdump", "rack2-12.mgmt", {"wait": "5"})
    assert redfish.address == "https://rack2-12-bmc.mgmt"
    # The label too: every string of the entry.
    assert redfish.name == "rack2-12-bmc"
    assert redfish.describe() == "rack2-12-bmc: redfish https://rack2-12-bmc.mgmt"
    assert redfish.password == f"{SECRET}-rack2-12"
    assert redfish.options == {"system": "/redfish/v1/Systems/rack2-12", "verify": "0"}
    assert redfish.timeout == base.DriverSpec.timeout


def test_host_is_replaced_in_every_string_of_an_entry() -> None:
    text = textwrap.dedent(
        """\
        hosts:
          "c-*":
            - driver: redfish
              name: "{host}-r"
              address: "https://{host}-bmc"
              username: "u-{host}"
              password: "p-{host}"
              system: "S-{host}"
              verify: "/etc/ca/{host}.pem"
            - driver: agent
              name: "{host}-a"
              agent: "/opt/{host}/fence_x"
              address: "{host}-ipmi"
              username: "u-{host}"
              password: "p-{host}"
              port: 623
              args: {k: "v-{host}", n: 5}
        """
    )
    redfish, agent = FencingFile.parse(text, "f.yaml").drivers_for("c-7")
    strings = [redfish.name, redfish.address, redfish.username, redfish.password]
    strings += [agent.name, agent.address, agent.username, agent.password]
    strings += [*redfish.options.values(), *agent.options.values()]
    assert "{host}" not in repr(strings)
    assert all("c-7" in value for value in strings if value != "5"), strings
    assert agent.options == {"agent": "/opt/c-7/fence_x", "k": "v-c-7", "n": "5"}


def test_segment_default_by_uuid_then_name(fencing) -> None:
    (agent,) = fencing.drivers_for("compute-7", "segment-a", "1f7a4b36-5a39-4b7e-9a55-0c1f6cbd2b1a")
    assert agent.type == "agent"
    assert agent.address == "compute-7-ipmi"
    assert agent.options == {
        "agent": "fence_ipmilan",
        "lanplus": "1",
        "power_timeout": "5",
        "method": "onoff",
    }
    (kdump,) = fencing.drivers_for("compute-7", "segment-a", "another-uuid")
    assert kdump.address == "192.0.2.1"


def test_no_entry_and_an_empty_list_give_no_driver(fencing) -> None:
    assert fencing.drivers_for("compute-7", "segment-b", "another-uuid") is None
    assert fencing.drivers_for("compute-7") is None
    # An empty list is "no driver" even where a pattern and the segment would give some.
    assert fencing.drivers_for("rack2-9", "segment-a") is None


def test_the_lists_are_the_callers_own(fencing) -> None:
    fencing.drivers_for("rack2-12").clear()
    assert len(fencing.drivers_for("rack2-12")) == 2


def test_hosts_patterns_and_segments_in_file_order(fencing) -> None:
    assert fencing.hosts_patterns() == ["compute-01", "rack2-9", "rack2-*", "rack2-1*"]
    assert fencing.segments() == ["1f7a4b36-5a39-4b7e-9a55-0c1f6cbd2b1a", "segment-a"]


def test_no_secret_in_reprs(fencing) -> None:
    specs = fencing.drivers_for("rack2-12") + fencing.drivers_for("compute-01")
    shown = repr(fencing) + repr(specs) + " ".join(spec.describe() for spec in specs)
    assert SECRET not in shown


def entry(**fields: object) -> str:
    body = {"driver": "ipmi", "address": "bmc", "username": "admin", "password": SECRET}
    body.update(fields)
    body = {key: value for key, value in body.items() if value is not None}
    return "hosts:\n  compute-1:\n    - " + "\n      ".join(
        f"{key}: {value}" for key, value in body.items()
    )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "empty"),
        ("hosts: {}", "neither hosts: nor segments: has an entry"),
        ("hostz: {}", "unknown key(s): hostz"),
        ("version: 2\nhosts: {a: []}", "version: must be 1"),
        ("hosts: [a]", "hosts: must be a mapping"),
        ("hosts: {compute-1: {driver: ipmi}}", "hosts.compute-1: must be a list"),
        ("hosts: {compute-1: [ipmi]}", "hosts['compute-1'][0]: must be a mapping"),
        (entry(driver="wol"), "hosts['compute-1'][0]: 'driver' must be one of"),
        (entry(password=None), "hosts['compute-1'][0] (ipmi): 'password' is required"),
        (entry(password=987654321), "password: must be a string (quote it)"),
        (entry(port=0), "port: must be >= 1"),
        (entry(port='"623"'), "port: must be an integer"),
        (entry(timeout=0), "timeout: must be > 0"),
        (entry(timeout=3600), "timeout: must be <= 300"),
        (entry(address='""'), "address: must not be empty"),
        (entry(system="/x"), "unknown key(s): system"),
        (entry(driver="redfish", verify='""'), "verify: must not be empty"),
        (entry(driver="redfish", address="http://bmc"), "http:// sends the BMC password in clear"),
        (entry(driver="redfish", address="HTTP://bmc:80/x"), "http:// sends the BMC password"),
        (entry(driver="redfish", address="ftp://bmc"), "the URL's scheme must be https"),
        (entry(driver="redfish", allow_http='"yes"'), "allow_http: must be true or false"),
        (entry(allow_http="true"), "unknown key(s): allow_http"),
        (entry(driver="agent"), "'agent' is required"),
        (entry(driver="agent", agent='"rm -rf /"'), "agent: must be a fence agent's name"),
        (entry(driver="agent", agent="fence_x", args="{passwd: x}"), "args: passwd may not"),
        (entry(driver="agent", agent="fence_x", args="{Bad Name: x}"), "names must be"),
        (entry(driver="agent", agent="fence_x", args="{a: [1]}"), "args.a: must be a string"),
        ("hosts: {compute-1: [{driver: kdump}]}", "'address' is required"),
        ("hosts: {compute-1: [{driver: kdump, address: a, password: p}]}", "unknown key(s)"),
        ("hosts: {compute-1: [{driver: lease, path: /dev/x}]}", "'watchdog_timeout' is required"),
        ("hosts: {c: [{driver: lease, watchdog_timeout: 5}]}", "(lease): 'path' is required"),
        ("hosts: {c: [{driver: lease, path: x, watchdog_timeout: 5, port: 1}]}", "unknown key"),
        ("hosts: {c: [{driver: lease, path: x, watchdog_timeout: 0}]}", "must be > 0"),
        (
            "hosts: {c: [{driver: lease, path: x, watchdog_timeout: 5, misses: 4}]}",
            "hosts['c'][0] (lease): misses: interval x misses must be at least",
        ),
        (
            "hosts: {c: [{driver: lease, path: x, watchdog_timeout: 5, timeout: 9}]}",
            "timeout must be at least interval x misses + watchdog_timeout (10 s)",
        ),
        ("hosts: {'rack[1-3': []}", "unbalanced [ ]"),
        ("hosts:\n  a: []\n  a: []", "line 3, column 3: key 'a' given twice"),
        (f'hosts:\n  a:\n    - password: "{SECRET}', "not valid YAML: line 3"),
        (f"hosts:\n  a:\n\t- password: {SECRET}", "not valid YAML: line 3"),
    ],
)
def test_errors_name_the_file_and_the_entry_never_a_value(text, says) -> None:
    with pytest.raises(FencingFileError) as caught:
        FencingFile.parse(text, "/etc/masakari/fencing.yaml")
    message = str(caught.value)
    assert message.startswith("fencing file /etc/masakari/fencing.yaml: ")
    assert says in message
    assert SECRET not in message and "987654321" not in message


def test_redfish_over_http_only_when_the_entry_says_so(caplog) -> None:
    allowed = entry(driver="redfish", address='"http://{host}-bmc:8000"', allow_http="true")
    with caplog.at_level(logging.WARNING, logger="masakari.fencing.config"):
        fencing = FencingFile.parse(allowed, "/etc/masakari/fencing.yaml")
    (spec,) = fencing.drivers_for("compute-1")
    assert spec.address == "http://compute-1-bmc:8000"
    assert "allow_http" not in spec.options
    (warning,) = caplog.records
    assert "hosts['compute-1'][0] (redfish)" in warning.getMessage()
    assert SECRET not in warning.getMessage()
    # https, or no scheme at all (https), needs no key; allow_http with https changes nothing.
    for address in ("https://bmc", "bmc", "bmc.example:8443"):
        FencingFile.parse(entry(driver="redfish", address=address), "f.yaml")
    FencingFile.parse(entry(driver="redfish", address="https://bmc", allow_http="false"), "f")


def test_load_reads_the_file_and_warns_once_when_others_may_read_it(tmp_path, caplog) -> None:
    path = tmp_path / "fencing.yaml"
    path.write_text(EXAMPLE)
    os.chmod(path, 0o600)
    with caplog.at_level(logging.WARNING, logger="masakari.fencing.config"):
        loaded = FencingFile.load(str(path))
    assert loaded.drivers_for("compute-01")[0].password == SECRET
    assert caplog.records == []

    os.chmod(path, 0o640)
    with caplog.at_level(logging.WARNING, logger="masakari.fencing.config"):
        FencingFile.load(str(path))
    (warning,) = caplog.records
    assert str(path) in warning.getMessage() and "0o640" in warning.getMessage()
    assert SECRET not in warning.getMessage()


def test_load_of_a_missing_or_unreadable_file(tmp_path) -> None:
    with pytest.raises(FencingFileError, match=r"fencing\.yaml: cannot be read: No such file"):
        FencingFile.load(str(tmp_path / "fencing.yaml"))
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe" + SECRET.encode())
    with pytest.raises(FencingFileError, match="not UTF-8") as caught:
        FencingFile.load(str(binary))
    assert SECRET not in str(caught.value)


def test_the_sample_file_is_a_valid_fencing_file() -> None:
    sample = pathlib.Path(__file__).resolve().parents[3] / "etc/masakari/fencing.yaml.sample"
    fencing = FencingFile.parse(sample.read_text(), str(sample))
    assert [s.type for s in fencing.drivers_for("compute-01")] == ["ipmi", "redfish"]
    assert [s.address for s in fencing.drivers_for("rack2-03")] == [
        "rack2-03.mgmt",
        "https://rack2-03-bmc.mgmt",
    ]
    assert fencing.drivers_for("rack2-17", "segment-az1") is None
    _, edge = fencing.drivers_for("edge-4")
    assert (edge.type, edge.timeout, edge.options["host"]) == ("lease", 22.0, "edge-4")
    ipmi, ceph = fencing.drivers_for("rack3-04")
    assert (ceph.type, ceph.address, ceph.options["user"]) == (
        "ceph",
        "rack3-04.storage",
        "masakari-fence",
    )
    (agent,) = fencing.drivers_for("compute-99", "segment-az1")
    assert agent.options == {"agent": "fence_ipmilan", "lanplus": "1", "power_timeout": "15"}


CEPH = textwrap.dedent(
    """\
    hosts:
      "rack3-*":
        - driver: ceph
          name: "{host}-rbd"
          address: "{host}.storage"
          addresses: [10.30.0.7, "{host}.storage2"]
          conf: /etc/ceph/ceph.conf
          user: masakari-fence
          keyring: /etc/ceph/ceph.client.masakari-fence.keyring
          expire: 86400
          after_power: true
          timeout: 5
    """
)


def test_a_ceph_entry_host_filled_in_everywhere() -> None:
    (spec,) = FencingFile.parse(CEPH).drivers_for("rack3-04")
    assert (spec.type, spec.name, spec.address, spec.timeout) == (
        "ceph",
        "rack3-04-rbd",
        "rack3-04.storage",
        5.0,
    )
    assert spec.options == {
        "addresses": "10.30.0.7,rack3-04.storage2",
        "conf": "/etc/ceph/ceph.conf",
        "user": "masakari-fence",
        "keyring": "/etc/ceph/ceph.client.masakari-fence.keyring",
        "expire": "86400",
        "after_power": "1",
    }


def test_a_ceph_entry_is_built_without_its_cluster_unless_the_ceph_command_is_missing(
    monkeypatch,
) -> None:
    entries = FencingFile.parse(CEPH).entries()
    monkeypatch.setattr(ceph, "CEPH", "/bin/sh")  # any program: nothing is run
    assert drivers.unbuildable(entries) == []
    monkeypatch.setattr(ceph, "CEPH", "/nonexistent/ceph")
    monkeypatch.setattr(ceph.shutil, "which", lambda name: None)
    assert [(u.where, u.why) for u in drivers.unbuildable(entries)] == [
        ("hosts['rack3-*'][0]", "the ceph command is missing (Debian package ceph-common)")
    ]


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("{driver: ceph}", "(ceph): 'addresses' is required"),
        ("{driver: ceph, addresses: []}", "addresses: must not be empty"),
        ("{driver: ceph, addresses: ['10.0.0.1,10.0.0.2']}", "addresses[0]: must be one address"),
        ("{driver: ceph, address: a, conf: ceph.conf}", "conf: must be an absolute path"),
        ("{driver: ceph, address: a, keyring: k}", "keyring: must be an absolute path"),
        ("{driver: ceph, address: a, user: 'client admin'}", "user: must be a cephx user's id"),
        ("{driver: ceph, address: a, expire: 0}", "expire: must be > 0"),
        ("{driver: ceph, address: a, after_power: 1}", "after_power: must be true or false"),
        ("{driver: ceph, address: a, password: p}", "unknown key(s): password"),
    ],
)
def test_ceph_entry_errors(entry, says) -> None:
    with pytest.raises(FencingFileError) as caught:
        FencingFile.parse(f"hosts: {{compute-1: [{entry}]}}", "/etc/masakari/fencing.yaml")
    assert says in str(caught.value)


def test_entries_in_file_order_named_as_errors_name_them(fencing) -> None:
    found = fencing.entries()
    assert [where for where, _ in found] == [
        "hosts['compute-01'][0]",
        "hosts['rack2-*'][0]",
        "hosts['rack2-*'][1]",
        "hosts['rack2-1*'][0]",
        "segments['1f7a4b36-5a39-4b7e-9a55-0c1f6cbd2b1a'][0]",
        "segments['segment-a'][0]",
    ]
    # No host is known under a pattern or a segment: {host} stays as written.
    assert found[2][1].address == "https://{host}-bmc.mgmt"
    assert found[0][1] == fencing.drivers_for("compute-01")[0]


def test_entries_whose_driver_cannot_be_built(fencing, monkeypatch) -> None:
    # Without the [fencing] extra, and without fence-agents.
    real = drivers.importlib.util.find_spec
    monkeypatch.setattr(
        drivers.importlib.util,
        "find_spec",
        lambda name, *a: None if name in ("pyghmi", "sushy") else real(name, *a),
    )
    monkeypatch.setattr(agent, "find_agent", lambda name: None)
    found = drivers.unbuildable(fencing.entries())
    # kdump entries are no power driver: nothing to build.
    assert [(u.where, u.why) for u in found] == [
        ("hosts['compute-01'][0]", "the ipmi driver needs pyghmi: pip install 'masakari[fencing]'"),
        (
            "hosts['rack2-*'][1]",
            "the redfish driver needs sushy: pip install 'masakari[fencing]'",
        ),
        ("hosts['rack2-1*'][0]", "the ipmi driver needs pyghmi: pip install 'masakari[fencing]'"),
        (
            "segments['1f7a4b36-5a39-4b7e-9a55-0c1f6cbd2b1a'][0]",
            "fence agent 'fence_ipmilan' not found (looked in /usr/sbin, /sbin, /usr/bin, "
            "/bin and $PATH)",
        ),
    ]
    assert str(found[0]) == (
        "hosts['compute-01'][0] (bmc: ipmi 10.0.0.11:6230): its driver cannot be built: "
        "the ipmi driver needs pyghmi: pip install 'masakari[fencing]'"
    )
    assert SECRET not in " ".join(map(str, found))
    # Installed, they build (without a BMC call).
    monkeypatch.undo()
    assert [u.where for u in drivers.unbuildable(fencing.entries())] == (
        [] if agent.find_agent("fence_ipmilan") else [found[-1].where]
    )


def test_a_lease_entry_filled_in_for_each_host() -> None:
    fencing = FencingFile.parse(
        textwrap.dedent(
            """\
            hosts:
              "edge-*":
                - driver: ipmi
                  address: "{host}-ipmi"
                  username: a
                  password: b
                - driver: lease
                  name: "{host}-lease"
                  path: /dev/disk/by-id/wwn-0x5000
                  interval: 2
                  watchdog_timeout: 10
            """
        )
    )
    _, spec = fencing.drivers_for("edge-3")
    assert (spec.type, spec.address, spec.timeout) == ("lease", "/dev/disk/by-id/wwn-0x5000", 24.0)
    assert spec.options == {
        "interval": "2",
        "misses": "5",
        "watchdog_timeout": "10",
        "host": "edge-3",
    }
    assert spec.describe() == "edge-3-lease: lease /dev/disk/by-id/wwn-0x5000"
    # no power driver to build: the doctor's startup check says nothing of it
    assert drivers.unbuildable([e for e in fencing.entries() if e[1].type == "lease"]) == []
