"""The storage-path loss's action of a segment, and which signals an engine is given."""

from __future__ import annotations

from pathlib import Path

import pytest
from oslo_config import cfg

from masakari import conf as masakari_conf
from masakari import signals
from masakari.conf.quarantine import storage_loss_action
from masakari.signals import storage_loss


def test_a_segment_named_by_uuid_or_name_has_its_own_action() -> None:
    conf = masakari_conf.for_tests(
        **{
            "quarantine.segment_storage_loss_action": {
                "ceph-racks": "aggressive",
                "u-2": "conservative",
            }
        }
    )
    assert storage_loss_action(conf, "u-1", "ceph-racks") == "aggressive"
    assert storage_loss_action(conf, "u-2", "ceph-racks") == "conservative"  # the uuid first
    assert storage_loss_action(conf, "u-3", "local") == "conservative"  # the default


def test_an_unknown_action_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "masakari.conf"
    path.write_text("[quarantine]\nsegment_storage_loss_action = rack-a:wild\n")
    conf = masakari_conf.load(["--config-file", str(path)], prog="masakari-engine")
    with pytest.raises(cfg.ConfigFileValueError):
        _ = conf.quarantine.segment_storage_loss_action


def test_off_by_default_the_engine_is_given_no_judge_and_no_task() -> None:
    built = signals.build(masakari_conf.for_tests(), None, None)  # type: ignore[arg-type]
    assert built.judge_instance is None and built.tasks() == []
    on = masakari_conf.for_tests(**{"quarantine.storage_error_instances": 3})
    judge = signals.build(on, None, None).judge_instance  # type: ignore[arg-type]
    assert isinstance(judge, storage_loss.StorageJudge)
