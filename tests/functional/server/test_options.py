"""[wsgi] options that masakari-api acts on: TLS, keep_alive, max_header_line."""

from __future__ import annotations

import http.client
import shutil
import ssl
import subprocess

import pytest

from tests.support.api_process import STRICT, APIProcess


@pytest.fixture
def tls_api(tmp_path) -> APIProcess:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    api = APIProcess(
        str(tmp_path),
        f"sqlite:///{tmp_path}/masakari.db",
        workers=1,
        extra=(
            "[DEFAULT]\nuse_ssl = true\n"
            f"[wsgi]\nssl_cert_file = {cert}\nssl_key_file = {key}\n"
            "keep_alive = false\nmax_header_line = 200\n"
        ),
        scheme="https",
        ca_file=str(cert),
    )
    yield api
    assert api.stop() == 0


def test_tls_no_keep_alive_and_header_line_limit(tls_api: APIProcess) -> None:
    context = ssl.create_default_context(cafile=tls_api.ca_file)
    conn = http.client.HTTPSConnection("127.0.0.1", tls_api.port, context=context, timeout=5)
    conn.request("GET", "/v1/segments")
    response = conn.getresponse()
    assert response.status == 200
    assert response.read() == b'{"segments": []}'
    # keep_alive = false: the server closes after each response (and says so, from
    # gunicorn 27.0.1 on).
    if STRICT:
        assert response.getheader("Connection") == "close"
    else:
        assert conn.sock is not None and conn.sock.recv(1) == b""
    conn.close()

    conn = http.client.HTTPSConnection("127.0.0.1", tls_api.port, context=context, timeout=5)
    conn.request("GET", "/v1/segments", headers={"X-Long": "a" * 300})
    assert conn.getresponse().status == 431
    conn.close()

    plain = http.client.HTTPConnection("127.0.0.1", tls_api.port, timeout=5)
    with pytest.raises((OSError, http.client.HTTPException)):
        plain.request("GET", "/v1/segments")
        plain.getresponse()
    plain.close()
