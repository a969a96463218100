"""The lecture hall's nginx serves the pages itself: it must send the security headers Flask
sends for them. `backend/app/nginx_conf.py` writes nginx's copy from the same built site; here
every page's headers, as nginx would send them from those files, are compared with what Flask
answers for that page, and the proxy's config is checked to use them in every location that
serves files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from backend.app import create_app
from backend.app.nginx_conf import main, nginx_files

ROOT = Path(__file__).resolve().parents[2]
NGINX = ROOT / "deploy" / "nginx"
INCLUDE = "include /etc/nginx/book-headers.inc;"


def _csp_map(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(default, [(regex, value)]): the map holds regexes only, tried in order."""
    body = re.search(r"map \$uri \$book_csp \{\n(.*?)\n\}", text, re.S).group(1)
    default, rules = None, []
    for line in body.splitlines():
        m = re.fullmatch(r'\s*("?)(\S+?)\1\s+"([^"]*)";', line)
        assert m, line
        if m.group(2) == "default":
            default = m.group(3)
        else:
            assert m.group(2).startswith("~"), line
            rules.append((m.group(2)[1:], m.group(3)))
    return default, rules


def _nginx_headers(files: dict[str, str], uri: str) -> dict[str, str]:
    default, rules = _csp_map(files["book-csp.conf"])
    csp = next((value for regex, value in rules if re.search(regex, uri)), default)
    out = {}
    for line in files["book-headers.inc"].splitlines():
        if line.startswith("add_header"):
            m = re.fullmatch(r'add_header (\S+) (\$book_csp|"[^"]*") always;', line)
            assert m, line
            out[m.group(1)] = csp if m.group(2) == "$book_csp" else m.group(2)[1:-1]
    return out


@pytest.fixture(scope="module")
def files(built_site):
    return nginx_files(built_site, "")


def test_every_page_gets_from_nginx_the_headers_flask_sends(built_site, files):
    client = create_app({"TESTING": True, "SITE_DIR": str(built_site)}).test_client()
    pages = sorted(p for p in built_site.rglob("*.html"))
    default, rules = _csp_map(files["book-csp.conf"])
    assert rules == []  # one policy: instant navigation keeps the first page's
    for page in pages:
        rel = page.relative_to(built_site).as_posix()
        uris = ["/" + rel]
        if rel.endswith("index.html"):  # as asked, and as nginx's $uri holds it after try_files
            uris += ["/" + rel[: -len("index.html")], "/" + rel[: -len("index.html")] + "/index.html"]
        for uri in uris:
            flask = client.get(uri.replace("//", "/")).headers
            nginx = _nginx_headers(files, uri)
            for name, value in nginx.items():
                assert flask[name] == value, (uri, name)
            assert "'unsafe-eval'" not in nginx["Content-Security-Policy"], uri
            assert nginx["Content-Security-Policy"] == default, uri
    assert len(nginx) >= 7


def test_the_proxy_uses_them_in_every_location_that_serves_files():
    conf = (NGINX / "default.conf").read_text()
    server = conf[conf.index("server {"):]
    # not at server level: the API's answers carry Flask's own headers, and would get two
    assert INCLUDE not in server.split("\n    location ", 1)[0]
    served = 0
    for where, body in re.findall(r"location ([^{]+)\{(.*?)\n    \}", server, re.S):
        if "/api/" in where or "/nginx-health" in where:
            assert INCLUDE not in body, where  # proxied (Flask's headers pass through), or a probe
        else:
            assert INCLUDE in body, where
            served += 1
    assert served >= 2  # the pages and assets, and the notebooks
    containerfile = (NGINX / "Containerfile").read_text()
    assert "/etc/nginx/book-headers.inc" in containerfile
    assert "/etc/nginx/conf.d/book-csp.conf" in containerfile  # http context, for the map


def test_the_command_writes_both_files_and_refuses_an_unbuilt_site(built_site, tmp_path):
    assert main([str(built_site), str(tmp_path / "out")]) == 0
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"book-csp.conf", "book-headers.inc"}
    with pytest.raises(SystemExit):
        main([str(tmp_path / "nothing"), str(tmp_path / "out2")])


def test_the_proxy_retries_a_stopped_replica_but_never_a_slow_computation():
    """A POST goes to the next replica when one is gone or full (error, 502, 503; non_idempotent,
    since a stopping replica may close a kept-alive connection under a request; timeout, since a
    stopped container's address may not even refuse), but a read timeout is never retried: the
    retry window closes before proxy_read_timeout, so a slow computation is not run twice, while
    it stays open past the heavy widgets' wait so their 503 still moves on."""
    from backend import settings

    conf = (NGINX / "default.conf").read_text()
    api = conf[conf.index("location /api/ {"):]
    api = api[: api.index("\n    }")]

    def directive(name):
        (line,) = [x.strip() for x in api.splitlines() if x.strip().startswith(name + " ")]
        return line.split("#")[0].strip().rstrip(";").split()[1:]

    def seconds(name):
        (value,) = directive(name)
        assert value.endswith("s")
        return float(value[:-1])

    conditions = set(directive("proxy_next_upstream"))
    assert {"error", "timeout", "http_502", "http_503", "non_idempotent"} <= conditions
    heavy_wait = settings.BY_NAME["BOOK_HEAVY_WAIT_SECONDS"].default
    assert seconds("proxy_connect_timeout") < heavy_wait
    assert heavy_wait < seconds("proxy_next_upstream_timeout") < seconds("proxy_read_timeout")


def test_the_proxy_lets_idle_replica_connections_go_before_gunicorn_does():
    """nginx keeps idle connections to the replicas; gunicorn closes a kept-alive connection
    after its `keepalive` seconds. nginx must drop them first, or it writes requests into
    connections the replica has closed."""
    import backend.gunicorn_conf as conf

    conf_text = (NGINX / "default.conf").read_text()
    upstream = conf_text[conf_text.index("upstream book_app {"):]
    upstream = upstream[: upstream.index("}")]
    (line,) = [x.strip() for x in upstream.splitlines() if x.strip().startswith("keepalive_timeout")]
    seconds = float(line.split()[1].rstrip(";").rstrip("s"))
    assert 0 < seconds < conf.keepalive


def test_the_proxy_writes_the_readers_address_into_the_sitemap():
    """The build's placeholder origin (widgets/build/site_url.py), replaced as Flask replaces it
    (tests/app/test_site.py): the reader's scheme and host, past trusted proxies; the plain file,
    never its precompressed copy, which sub_filter cannot read."""
    from backend.app.site import SITEMAP_PLACEHOLDER

    conf = (NGINX / "default.conf").read_text()
    body = re.search(r"location = /sitemap\.xml \{(.*?)\n    \}", conf, re.S).group(1)
    assert f'sub_filter "{SITEMAP_PLACEHOLDER}" "$book_sitemap_proto://$book_sitemap_host/";' in body
    # the host with its port (Material keeps a sitemap entry's port): the first forwarded entry,
    # else the Host header as the browser sent it ($host drops the port)
    for name, fallback in (("host", "$http_host"), ("proto", "$scheme")):
        m = re.search(rf"map \$http_x_forwarded_{name} \$book_sitemap_{name} \{{(.*?)\}}", conf, re.S)
        assert m, name
        assert re.search(r'""\s+' + re.escape(fallback) + ";", m.group(1)), m.group(1)
        assert re.search(r'"~\^\(\?<first>\[\^,\\s\]\+\)"\s+\$first;', m.group(1)), m.group(1)
    assert "gzip_static off;" in body and "sub_filter_once off;" in body
    assert "text/xml" in body
