"""What ``pip install .`` puts on disk, and the committed samples match their generators."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
BIN = pathlib.Path(sys.executable).parent
ETC = REPO / "etc" / "masakari"

# Installed file (under <prefix>/etc/masakari/) -> its source in the repository.
DATA_FILES = {
    "api-paste.ini": REPO / "masakari" / "api" / "api-paste.ini",
    "masakari.conf.sample": ETC / "masakari.conf.sample",
    "masakari-config-generator.conf": ETC / "masakari-config-generator.conf",
    "policy.yaml.sample": ETC / "policy.yaml.sample",
    "masakari-policy-generator.conf": ETC / "masakari-policy-generator.conf",
    "masakari.conf.recommended": ETC / "masakari.conf.recommended",
    "fencing.yaml.sample": ETC / "fencing.yaml.sample",
}
PACKAGE_DATA = ("masakari/api/api-paste.ini", "masakari/db/migrations/script.py.mako")
NOT_SOURCES = (".git", ".venv", ".ref-venv", "build", "state", "*.egg-info", "__pycache__")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    # A copy of the tree: setuptools writes build/ and *.egg-info next to the sources.
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(*NOT_SOURCES), symlinks=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp / "dist"),
            str(src),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    (path,) = (tmp / "dist").glob("masakari-*.whl")
    return zipfile.ZipFile(path)


def test_wheel_installs_the_samples_and_the_paste_file_under_etc(wheel) -> None:
    names = set(wheel.namelist())
    data = {n.split("/data/etc/masakari/", 1)[1]: n for n in names if "/data/etc/masakari/" in n}
    assert set(data) == set(DATA_FILES)
    for name, source in DATA_FILES.items():
        assert wheel.read(data[name]) == source.read_bytes(), name


def test_wheel_carries_the_package_data_the_code_reads(wheel) -> None:
    names = set(wheel.namelist())
    for name in PACKAGE_DATA:
        assert name in names


def _generate(tool: str, generator_conf: str, tmp_path: pathlib.Path) -> tuple[str, str]:
    out = tmp_path / "generated"
    done = subprocess.run(
        [str(BIN / tool), "--config-file", str(ETC / generator_conf), "--output-file", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.read_text(), done.stderr


def test_config_sample_is_what_the_generator_writes(tmp_path) -> None:
    generated, _ = _generate("oslo-config-generator", "masakari-config-generator.conf", tmp_path)
    assert generated == (ETC / "masakari.conf.sample").read_text(), (
        "regenerate: oslo-config-generator --config-file "
        "etc/masakari/masakari-config-generator.conf"
    )


def test_policy_sample_is_what_the_generator_writes(tmp_path) -> None:
    generated, stderr = _generate(
        "oslopolicy-sample-generator", "masakari-policy-generator.conf", tmp_path
    )
    assert generated == (ETC / "policy.yaml.sample").read_text(), (
        "regenerate: oslopolicy-sample-generator --config-file "
        "etc/masakari/masakari-policy-generator.conf"
    )
    assert "eventlet" not in stderr.lower()
