"""masakari-api's worker processes share their counts through prometheus_client's
multi-process mode: each process writes its values to files in one directory, and a scrape
of any worker (or of the server's own listener) reads them all."""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import tempfile

from oslo_config import cfg
from prometheus_client import multiprocess as prom_multiprocess
from prometheus_client import values

from masakari import metrics


def wanted(conf: cfg.ConfigOpts) -> bool:
    return bool(conf.metrics.enabled or conf.metrics.api_port)


def prepare(conf: cfg.ConfigOpts) -> str | None:
    """Switch this process, and the workers it forks, to multi-process values.

    The directory is PROMETHEUS_MULTIPROC_DIR when the deployer set it (emptied first: files
    of an earlier run would add their counts), else a fresh one removed at exit. Must run
    before any instrument counts (masakari.metrics creates them on first use).
    """
    if not wanted(conf):
        return None
    directory = os.environ.get(metrics.MULTIPROC_ENV)
    if directory:
        os.makedirs(directory, exist_ok=True)
        for path in glob.glob(os.path.join(directory, "*.db")):
            os.unlink(path)
    else:
        directory = tempfile.mkdtemp(prefix="masakari-api-metrics-")
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
        os.environ[metrics.MULTIPROC_ENV] = directory
    # prometheus_client picks its value class when first imported, which is earlier.
    values.ValueClass = values.get_value_class()
    metrics.forget_instruments()
    return directory


def worker_exited(pid: int) -> None:
    """gunicorn's child_exit hook: the dead worker's live gauges stop counting."""
    if metrics.multiprocess():
        prom_multiprocess.mark_process_dead(pid)
