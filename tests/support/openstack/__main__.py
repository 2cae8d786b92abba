"""The real control plane from the command line (tools/openstack.sh runs it).

python -m tests.support.openstack up [--state DIR] [--venv DIR] [--computes N] [--db-url URL]
python -m tests.support.openstack status|down|purge [--state DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tests.support.openstack.cloud import STATE_FILE, Cloud
from tests.support.openstack.config import Layout

DEFAULT_STATE = Path(".openstack-state")
DEFAULT_VENV = Path(".venv-openstack")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tools/openstack.sh")
    parser.add_argument("action", choices=("up", "down", "purge", "status"))
    parser.add_argument("--state", type=Path, default=DEFAULT_STATE)
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    parser.add_argument("--computes", type=int, default=3)
    parser.add_argument("--base-port", type=int, default=25000)
    parser.add_argument(
        "--prefix",
        default="realos",
        help="names the cloud's databases (PREFIX_nova, ...) and RabbitMQ vhost: two clouds on "
        "one machine need two prefixes, two states and two base ports",
    )
    parser.add_argument(
        "--db-url",
        default=Layout.db_url,
        help="the MariaDB server of the cloud's databases (the machine's on port 3306): a cloud "
        "beside others on one server may run out of its max_connections",
    )
    parser.add_argument(
        "--rpc-timeout",
        type=int,
        default=60,
        help="Nova's rpc_response_timeout (60, Nova's default): how long a disable of a "
        "just-killed host blocks",
    )
    args = parser.parse_args(argv)
    state = args.state.resolve()
    if args.action == "up":
        layout = Layout(
            state=state,
            venv=args.venv.resolve(),
            base_port=args.base_port,
            computes=tuple(f"compute-{n}" for n in range(1, args.computes + 1)),
            db_url=args.db_url,
            db_prefix=f"{args.prefix}_",
            vhost=args.prefix,
            rpc_response_timeout=args.rpc_timeout,
        )
        Cloud(layout).up()
        print(f"ready: export MASAKARI_REAL_OPENSTACK={state}")
        return 0
    if not (state / STATE_FILE).exists():
        print(f"no cloud in {state}", file=sys.stderr)
        return 1 if args.action == "status" else 0
    cloud = Cloud.load(state)
    if args.action == "status":
        status = cloud.status()
        print(json.dumps(status, indent=2))
        return 0 if all(status.values()) else 1
    cloud.down(purge=args.action == "purge")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
