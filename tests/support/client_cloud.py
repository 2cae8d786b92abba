"""A deployment the real clients talk to: masakari-api (keystone auth) and masakari-engine
started from their commands, the Nova simulator as Keystone and Nova, a clouds.yaml."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import yaml

from tests.fakes import nova as fake_nova
from tests.fakes.nova import NovaSimulator
from tests.support.api_process import APIProcess

CLOUD = "masakari-sim"
COMPUTE_HOSTS = tuple(f"compute-{i}" for i in range(1, 8))

# Engine timings short enough for a host recovery in a few seconds.
FAST_ENGINE = {
    "wait_period_after_service_update": 0,
    "wait_period_after_evacuation": 1,
    "verify_interval": 1,
    "engine_poll_interval": 0.1,
}


class Cloud:
    """What a user has: a cloud in clouds.yaml, and the services behind it."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.sim = NovaSimulator().start()
        for host in COMPUTE_HOSTS:
            self.sim.add_service(host)
        overrides = self.sim.conf_overrides()
        default = "".join(f"{k} = {v}\n" for k, v in overrides.items() if "." not in k)
        default += "".join(f"{k} = {v}\n" for k, v in FAST_ENGINE.items())
        authtoken = "".join(
            f"{k.split('.', 1)[1]} = {v}\n" for k, v in overrides.items() if "." in k
        ) + "".join(f"{k} = {v}\n" for k, v in self.sim.authtoken_plugin_options().items())
        self.api = APIProcess(
            directory,
            f"sqlite:///{directory}/masakari.db",
            workers=1,
            # Later sections of the same name add to (and override) the earlier ones.
            extra=f"[DEFAULT]\nauth_strategy = keystone\n{default}"
            f"[keystone_authtoken]\n{authtoken}",
        )
        self.sim.catalog_extra["instance-ha"] = (
            f"http://127.0.0.1:{self.api.port}/v1/{fake_nova.SERVICE_PROJECT_ID}"
        )
        with open(os.path.join(directory, "engine-stderr.log"), "wb") as log:
            self.engine = subprocess.Popen(
                [sys.executable, "-m", "masakari.cmd.engine", "--config-file", self.api.conf],
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
            )
        self.clouds_yaml = os.path.join(directory, "clouds.yaml")
        with open(self.clouds_yaml, "w") as fh:
            yaml.safe_dump({"clouds": {CLOUD: self.cloud_config()}}, fh)
        # What the CLI and openstacksdk read to find the cloud.
        self.env = {**os.environ, "OS_CLIENT_CONFIG_FILE": self.clouds_yaml, "OS_CLOUD": CLOUD}

    def cloud_config(self) -> dict[str, object]:
        return {
            "auth": {
                "auth_url": self.sim.auth_url,
                "username": "admin",
                "password": "secret",
                "project_name": "admin",
                "user_domain_name": "Default",
                "project_domain_name": "Default",
            },
            "region_name": "RegionOne",
            "interface": "public",
            "identity_api_version": 3,
        }

    def close(self) -> None:
        if self.engine.poll() is None:
            os.killpg(self.engine.pid, signal.SIGTERM)
            try:
                self.engine.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.engine.pid, signal.SIGKILL)
                self.engine.wait()
        self.api.stop()
        self.sim.stop()
