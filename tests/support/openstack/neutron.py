"""The Neutron stand-in of the real-OpenStack drills: every list is empty.

Servers are booted with ``networks: "none"``, so Nova never creates a port; but an evacuation
still lists the server's ports (and nova-compute asks for extensions). Nova reaches this through
``[neutron] endpoint_override``. It is the one service of the drills that is not upstream's:
Neutron itself would need an agent and a data plane that the fake virt driver never uses.

    python -m tests.support.openstack.neutron PORT
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def answer(path: str) -> tuple[int, dict[str, object]]:
    """The status and body for a GET of ``path``."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if not parts:
        return 200, {"versions": [{"id": "v2.0", "status": "CURRENT", "links": []}]}
    if parts[0] != "v2.0" or len(parts) > 2:
        return 404, {"NeutronError": {"type": "HTTPNotFound", "message": path, "detail": ""}}
    if len(parts) == 1:
        return 200, {"resources": []}
    resource = parts[1].removesuffix(".json")
    return 200, {resource: []}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        status, body = answer(self.path)
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        sys.stderr.write(f"{self.address_string()} {format % args}\n")


def main(argv: list[str]) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", int(argv[0])), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
