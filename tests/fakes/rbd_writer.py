"""A compute host's disk I/O, for tests/fakes/ceph_cluster.py: write to one RBD image in a loop.

Run by Debian's /usr/bin/python3 (python3-rados and python3-rbd import nowhere else), inside
the host's network namespace; standalone (no masakari import). Prints one JSON line per
acknowledged write (``{"wrote": N}``) and, when a write fails, ``{"error": ..., "errno": ...}``
and exits 1 (a fenced client gets ESHUTDOWN, errno 108, at once).

    python3 rbd_writer.py CONF POOL IMAGE
"""

import json
import sys
import time

import rados
import rbd

BLOCK = 4096


def main() -> int:
    conf, pool, name = sys.argv[1:4]
    cluster = rados.Rados(conffile=conf, rados_id="admin")
    cluster.connect(timeout=20)
    ioctx = cluster.open_ioctx(pool)
    image = rbd.Image(ioctx, name)
    count = 0
    try:
        while True:
            # A flush each time: the write must reach the OSD, not a cache.
            image.write(count.to_bytes(8, "little") * (BLOCK // 8), (count % 256) * BLOCK)
            image.flush()
            count += 1
            print(json.dumps({"wrote": count}), flush=True)
            time.sleep(0.05)
    except (rbd.Error, rados.Error) as exc:
        failed = {"error": type(exc).__name__, "errno": getattr(exc, "errno", None)}
        print(json.dumps(failed), flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
