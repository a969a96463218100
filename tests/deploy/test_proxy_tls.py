"""HTTPS for the lecture hall (compose.tls.yaml): the proxy's start script writes nginx's 443
listener with the certificate mounted from BOOK_TLS_DIR, or one it makes itself at the first
start and keeps; plain HTTP is redirected, the health check's path aside.

The script runs here outside the image (a stand-in `nginx -v`, the host's openssl, folders under
tmp_path). One test builds the proxy image and serves HTTPS from it with podman: marked
container, it skips without root and podman, or without an app image to copy the book from
(BOOK_IMAGE, default localhost/transformer-book:test, as tests/deploy/test_compose.py builds it).
"""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.support.server import free_port

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "deploy/nginx/book-proxy-start.sh"

needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


def start(tmp_path: Path, nginx_version: str = "1.22.1", **env) -> subprocess.CompletedProcess:
    """The start script, its nginx a stand-in that only says its version, its command `echo`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "nginx").write_text(f'#!/bin/sh\necho "nginx version: nginx/{nginx_version}" >&2\n')
    (bin_dir / "nginx").chmod(0o755)
    paths = {"BOOK_TLS_MOUNTED": str(tmp_path / "mounted"), "BOOK_TLS_STATE": str(tmp_path / "state"),
             "BOOK_TLS_CONF": str(tmp_path / "conf.d" / "tls.conf")}
    return subprocess.run(["sh", str(SCRIPT), "echo", "nginx started"], capture_output=True,
                          text=True, timeout=60,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", **paths, **env})


def conf(tmp_path: Path) -> str:
    return (tmp_path / "conf.d" / "tls.conf").read_text()


def san(cert: Path) -> str:
    return subprocess.run(["openssl", "x509", "-in", str(cert), "-noout", "-ext", "subjectAltName"],
                          capture_output=True, text=True, check=True).stdout


def test_off_by_default_writes_nothing_and_starts_nginx(tmp_path):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "tls.conf").write_text("listen 443 ssl;")  # an earlier start's
    proc = start(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "nginx started\n"
    assert not (tmp_path / "conf.d" / "tls.conf").exists()
    assert not (tmp_path / "state").exists()


@needs_openssl
def test_on_without_a_certificate_makes_one_and_keeps_it(tmp_path):
    proc = start(tmp_path, BOOK_TLS="on", BOOK_HTTPS_PORT="8443",
                 BOOK_TLS_NAMES="book.example.edu,10.0.0.5,::1,cafe1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "nginx started\n"
    cert = tmp_path / "state" / "self-signed.pem"
    text = conf(tmp_path)
    assert f"ssl_certificate {cert};" in text
    assert f"ssl_certificate_key {tmp_path / 'state' / 'self-signed.key'};" in text
    assert "listen 443 ssl http2;" in text            # nginx 1.22: HTTP/2 on the listen line
    assert 'set $book_to_https "https://$host:8443$request_uri";' in text
    assert "if ($uri = /nginx-health)" in text        # the health check stays on HTTP
    assert "return 308 $book_to_https;" in text
    names = san(cert)
    for part in ("DNS:book.example.edu", "IP Address:10.0.0.5", "IP Address:0:0:0:0:0:0:0:1",
                 "DNS:cafe1"):
        assert part in names
    assert oct((tmp_path / "state" / "self-signed.key").stat().st_mode & 0o777) == "0o600"
    # the next start keeps it (a browser told to accept it is not asked again) ...
    first = cert.read_bytes()
    assert start(tmp_path, BOOK_TLS="on", BOOK_TLS_NAMES="book.example.edu,10.0.0.5,::1,cafe1") \
        .returncode == 0
    assert cert.read_bytes() == first
    # ... until the names change
    assert start(tmp_path, BOOK_TLS="on", BOOK_TLS_NAMES="localhost").returncode == 0
    assert cert.read_bytes() != first and "DNS:localhost" in san(cert)


@needs_openssl
def test_a_mounted_certificate_is_used_and_newer_nginx_gets_http2_on(tmp_path):
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "30", "-subj", "/CN=x",
                    "-keyout", str(mounted / "privkey.pem"), "-out", str(mounted / "fullchain.pem")],
                   check=True, capture_output=True)
    proc = start(tmp_path, nginx_version="1.27.3", BOOK_TLS="on", BOOK_HTTPS_PORT="443")
    assert proc.returncode == 0, proc.stderr
    text = conf(tmp_path)
    assert f"ssl_certificate {mounted / 'fullchain.pem'};" in text
    assert "listen 443 ssl;\nhttp2 on;" in text
    assert 'set $book_to_https "https://$host$request_uri";' in text  # 443: no port in the URL
    assert not (tmp_path / "state").exists()                          # nothing made


@pytest.mark.parametrize("files, env, said", [
    ({"fullchain.pem": "x"}, {}, "both fullchain.pem and privkey.pem"),
    ({}, {"BOOK_TLS": "maybe"}, "use on or off"),
    ({}, {"BOOK_HTTPS_PORT": "https"}, "must be a port number"),
])
def test_a_setting_it_cannot_use_stops_it_with_a_message(tmp_path, files, env, said):
    (tmp_path / "mounted").mkdir()
    for name, text in files.items():
        (tmp_path / "mounted" / name).write_text(text)
    proc = start(tmp_path, **{"BOOK_TLS": "on", **env})
    assert proc.returncode == 1 and said in proc.stderr and proc.stdout == ""


def test_the_image_and_the_server_block_take_the_scripts_file():
    """The written file lands where the book's server block includes it, and the image starts
    through the script."""
    default_conf = (ROOT / "deploy/nginx/default.conf").read_text()
    server = default_conf[default_conf.index("server {"):]
    assert "include /etc/nginx/book-tls.d/*.conf;" in server.split("location")[0]
    containerfile = (ROOT / "deploy/nginx/Containerfile").read_text()
    assert 'ENTRYPOINT ["/usr/local/bin/book-proxy-start"]' in containerfile
    assert "COPY book-proxy-start.sh /usr/local/bin/book-proxy-start" in containerfile
    assert "/etc/nginx/book-tls.d" in containerfile and "EXPOSE 80 443" in containerfile
    assert os.access(SCRIPT, os.X_OK)


def test_compose_tls_publishes_https_with_the_certificate_folder():
    env = {**os.environ, "BOOK_REDIS_PASSWORD": "pw", "BOOK_TLS_DIR": "/srv/book-tls",
           "BOOK_HTTPS_PORT": "443"}
    proc = subprocess.run([sys.executable, "-m", "podman_compose", "-f", "compose.yaml", "-f",
                           "compose.tls.yaml", "config"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    proxy = yaml.safe_load(proc.stdout)["services"]["proxy"]
    assert proxy["environment"]["BOOK_TLS"] == "on"
    assert proxy["environment"]["BOOK_HTTPS_PORT"] == "443"
    assert "127.0.0.1:443:443" in proxy["ports"] and "127.0.0.1:8080:80" in proxy["ports"]
    assert "/srv/book-tls:/etc/nginx/book-tls:ro" in proxy["volumes"]
    assert any(v.endswith(":/var/lib/book-tls") for v in proxy["volumes"])


# ------------------------------------------------------------------------- the image, live

BOOK_IMAGE = os.environ.get("BOOK_IMAGE", "localhost/transformer-book:test")
NGINX_BASE = os.environ.get("NGINX_BASE", "localhost/book-nginx:bookworm")


def proxy_image(tmp_path: Path, tag: str):
    """Build the proxy image (deploy/nginx) as `tag` from the book's image and the nginx base,
    and return a `podman(*args)` runner; skips where podman, root or those images are missing."""
    if sys.platform != "linux" or os.geteuid() != 0 or shutil.which("podman") is None:
        pytest.skip("the proxy image check needs root and podman")
    conf_file = tmp_path / "containers.conf"
    conf_file.write_text('[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n')
    env = {**os.environ, "CONTAINERS_CONF": str(conf_file)}

    def podman(*args, check=True, timeout=600):
        return subprocess.run(["podman", *args], env=env, capture_output=True, text=True,
                              check=check, timeout=timeout)

    for image in (BOOK_IMAGE, NGINX_BASE):
        if podman("image", "exists", image, check=False).returncode != 0:
            pytest.skip(f"no {image} (tests/container/build.sh, deploy/local-bases.sh make them)")
    podman("build", "--isolation=chroot", "--network=host", "-q", "--build-arg",
           f"BOOK_IMAGE={BOOK_IMAGE}", "--build-arg", f"NGINX_BASE={NGINX_BASE}", "-t", tag,
           "-f", "Containerfile", str(ROOT / "deploy/nginx"))
    return podman


@pytest.mark.container
@pytest.mark.slow
def test_the_proxy_image_serves_https(tmp_path):
    tag = f"localhost/book-proxy-tls-test:{os.getpid()}"
    podman = proxy_image(tmp_path, tag)
    name = f"book-proxy-tls-{os.getpid()}"
    http_port, https_port = free_port(), free_port()
    try:
        # no replicas: `app` resolves to loopback, where nothing answers (the API is a 502)
        podman("run", "-d", "--name", name, "--add-host", "app:127.0.0.1", "-e", "BOOK_TLS=on",
               "-e", f"BOOK_HTTPS_PORT={https_port}", "-p", f"127.0.0.1:{http_port}:80",
               "-p", f"127.0.0.1:{https_port}:443", tag)
        insecure = ssl.create_default_context()
        insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"https://127.0.0.1:{https_port}/", timeout=5,
                                            context=insecure) as r:
                    page, headers = r.read(), r.headers
                break
            except (urllib.error.URLError, ConnectionError, OSError) as err:
                if time.monotonic() > deadline:
                    raise AssertionError(podman("logs", name, check=False).stderr[-3000:]) from err
                time.sleep(0.5)
        assert b"<html" in page.lower() and "max-age=31536000" in headers["Strict-Transport-Security"]
        # the certificate is the one made for the default names, and it is not trusted by default
        cert = ssl.get_server_certificate(("127.0.0.1", https_port))
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(f"https://127.0.0.1:{https_port}/", timeout=5)
        assert "BEGIN CERTIFICATE" in cert

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *a, **k):
                return None
        opener = urllib.request.build_opener(NoRedirect)
        with pytest.raises(urllib.error.HTTPError) as moved:
            opener.open(f"http://127.0.0.1:{http_port}/chapters/?a=1", timeout=5)
        assert moved.value.code == 308
        assert moved.value.headers["Location"] == f"https://127.0.0.1:{https_port}/chapters/?a=1"
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/nginx-health", timeout=5) as r:
            assert r.status == 200  # the health check's path stays on HTTP
        logs = podman("logs", name, check=False)
        assert "made a self-signed certificate" in logs.stdout + logs.stderr
    finally:
        podman("rm", "-f", name, check=False)
        podman("rmi", "-f", tag, check=False)


ECHO = """
import http.server, json
class Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({k.lower(): v for k, v in self.headers.items()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.ThreadingHTTPServer(("127.0.0.1", 8000), Echo).serve_forever()
"""


@pytest.mark.container
@pytest.mark.slow
def test_behind_a_campus_proxy_the_app_sees_the_readers_scheme_and_address(tmp_path):
    """nginx appends its scheme and host to what a proxy in front of it sent, as it appends the
    address: with BOOK_TRUSTED_PROXIES=2 the app then takes the campus proxy's entries (the
    reader's address, https, the public host) and writes https links into the notebooks it
    serves; with 1, nginx's own. The real nginx of the proxy image in a pod with a stand-in
    replica that answers with the headers it was sent; those headers then go to the app."""
    tag, pod = f"localhost/book-proxy-fwd-test:{os.getpid()}", f"book-fwd-{os.getpid()}"
    podman = proxy_image(tmp_path, tag)
    port = free_port()
    try:
        podman("pod", "create", "--name", pod, "--add-host", "app:127.0.0.1",
               "-p", f"127.0.0.1:{port}:80")
        podman("run", "-d", "--pod", pod, "--name", f"{pod}-app", "--entrypoint", "python",
               BOOK_IMAGE, "-c", ECHO)
        podman("run", "-d", "--pod", pod, "--name", f"{pod}-proxy", tag)

        def sent(headers: dict) -> dict:
            deadline = time.monotonic() + 60
            while True:
                req = urllib.request.Request(f"http://127.0.0.1:{port}/api/echo", headers=headers)
                try:
                    with urllib.request.urlopen(req, timeout=5) as r:
                        if r.headers.get_content_type() == "application/json":
                            import json
                            return json.loads(r.read())
                except (urllib.error.URLError, ConnectionError, OSError):
                    pass
                if time.monotonic() > deadline:
                    raise AssertionError(podman("logs", f"{pod}-proxy", check=False).stderr[-3000:])
                time.sleep(0.5)

        campus = sent({"X-Forwarded-For": "203.0.113.5", "X-Forwarded-Proto": "https",
                       "X-Forwarded-Host": "book.example.edu", "Host": "book.example.edu"})
        assert campus["x-forwarded-proto"] == "https, http"
        assert campus["x-forwarded-host"] == "book.example.edu, book.example.edu"
        assert campus["x-forwarded-for"].startswith("203.0.113.5, ")
        alone = sent({"Host": "book.example.edu"})
        assert alone["x-forwarded-proto"] == "http" and alone["x-forwarded-host"] == "book.example.edu"
    finally:
        podman("pod", "rm", "-f", pod, check=False)
        podman("rmi", "-f", tag, check=False)

    from backend.app import create_app

    def notebook_links(proxies: int, headers: dict) -> set[str]:
        import re

        app = create_app({"TESTING": True, "SITE_DIR": str(tmp_path), "TRUSTED_PROXIES": proxies})
        forwarded = {k: v for k, v in headers.items() if k.startswith("x-forwarded")}
        r = app.test_client().get("/api/widgets/sampling/notebook",
                                  headers={**forwarded, "Host": headers["host"]})
        assert r.status_code == 200
        return set(re.findall(r"https?://[a-z.]+/api/book-model", r.get_data(as_text=True)))

    assert notebook_links(2, campus) == {"https://book.example.edu/api/book-model"}
    assert notebook_links(1, alone) == {"http://book.example.edu/api/book-model"}


def test_the_api_cache_keeps_each_host_and_scheme_apart():
    """A notebook's links name the host and scheme it was asked on (they come from the
    forwarded headers): the cache key holds the same two, not nginx's default upstream name."""
    default_conf = (ROOT / "deploy/nginx/default.conf").read_text()
    api = default_conf[default_conf.index("location /api/ {"):]
    api = api[:api.index("\n    }")]
    assert "proxy_cache_key $book_forwarded_proto$book_forwarded_host$request_uri;" in api
    for header in ("Proto", "Host"):
        assert f"proxy_set_header X-Forwarded-{header} $book_forwarded_{header.lower()};" in api
