"""Requests to hosts other than the target: the public internet may or may not be
reachable from the agent's box, and the agent's own listeners answer on its address."""

from __future__ import annotations

from monsearch.synth.agent import Agent, External
from monsearch.synth.observations import Response, html, jres, text
from monsearch.synth.request import Req

#: Public identity-provider pages (not the operator's): what they serve when reachable.
PUBLIC_IDP = {
    "github.com": '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
    "<title>Sign in to GitHub \u00b7 GitHub</title>\n</head>\n<body>\n"
    '<form action="/session" method="post">\n<input type="text" name="login">\n'
    '<input type="password" name="password">\n</form>\n</body>\n</html>\n',
    "accounts.google.com": '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
    "<title>Sign in - Google Accounts</title>\n</head>\n<body>\n"
    '<div id="initialView"></div>\n</body>\n</html>\n',
}

def server_error_page(code: int, message: str, explanation: str) -> str:
    """The error page ``python3 -m http.server`` sends (its 404, its 501...)."""
    return (
        '<!DOCTYPE HTML>\n<html lang="en">\n    <head>\n        <meta charset="utf-8">\n'
        "        <title>Error response</title>\n    </head>\n    <body>\n"
        f"        <h1>Error response</h1>\n        <p>Error code: {code}</p>\n"
        f"        <p>Message: {message}.</p>\n"
        f"        <p>Error code explanation: {code} - {explanation}.</p>\n"
        "    </body>\n</html>\n"
    )


def unsupported_page(method: str) -> str:
    """What that server answers a method it lacks (a POST to a static server)."""
    return server_error_page(501, f"Unsupported method ('{method}')", "Server does not support this operation")


#: What it answers a path it cannot serve.
STATIC_404 = server_error_page(404, "File not found", "Nothing matches the given URI")


def static_listing(agent: Agent) -> str:
    """What ``python3 -m http.server`` started in /tmp serves for ``/``: the folder's
    entries (its sub-folders with a slash), sorted as it sorts them."""
    names = set()
    for p in (*agent.files, *agent.tmp_logs):
        if p.startswith("/tmp/"):
            first, _, rest = p[len("/tmp/") :].partition("/")
            names.add(first + "/" if rest else first)
    return (
        '<!DOCTYPE HTML>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>Directory listing for /</title>\n'
        "</head>\n<body>\n<h1>Directory listing for /</h1>\n<hr>\n<ul>\n"
        + "".join(f'<li><a href="{n}">{n}</a></li>\n' for n in sorted(names, key=str.lower))
        + "</ul>\n<hr>\n</body>\n</html>\n"
    )


def static_get(agent: Agent, path: str) -> tuple[int, str]:
    """What that server answers a GET of ``path``: the listing, a file of /tmp, or 404."""
    path = path.split("?", 1)[0]
    if path in ("", "/"):
        return 200, static_listing(agent)
    file = "/tmp" + path
    if file in agent.files:
        return 200, agent.files[file]
    return 404, STATIC_404


def internet(agent: Agent) -> External:
    """Requests to hosts other than the target: the public internet may or may not be reachable."""
    online = agent.rng.random() < 0.7
    rng = agent.rng
    token_uuid = f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-4{rng.getrandbits(12):03x}-a{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}"

    def handle(r: Req, t: float) -> Response | None:
        host = r.host
        if host in ("localhost", "127.0.0.1", "0.0.0.0", agent.ip, agent.hostname):
            kind = agent.listeners.get(r.port)
            if kind is None:
                return None
            if kind == "static" and r.method not in ("GET", "HEAD"):
                return html(501, unsupported_page(r.method))
            if kind == "static":
                status, page = static_get(agent, r.path_qs)
                return html(status, page)
            if kind == "echo" and r.method != "POST" and r.port in agent.post_only:
                return html(501, unsupported_page(r.method))
            return text(200, "ok\n") if kind != "echo" else text(200, r.body_text())
        if not online:
            return None
        if host in PUBLIC_IDP:
            return html(200, PUBLIC_IDP[host])
        if host == "pypi.org" or host.endswith("pythonhosted.org"):
            return html(
                200,
                '<!DOCTYPE html>\n<html>\n  <head>\n    <meta name="pypi:repository-version" content="1.4">\n    <title>Simple index</title>\n  </head>\n</html>\n',
            )
        if host == "webhook.site":
            if r.path == "/token" and r.method == "POST":
                return jres(
                    201,
                    {
                        "uuid": token_uuid,
                        "default_status": 200,
                        "default_content": "",
                        "redirect": False,
                    },
                )
            return text(200, "")
        if host.endswith(("oast.fun", "oast.pro", "oast.live", "interact.sh")):
            return html(
                200, "<html><head></head><body>" + f"{rng.getrandbits(64):x}" + "</body></html>"
            )
        if host.endswith(("example.com", "example.org")):
            return html(
                200,
                "<!doctype html>\n<html>\n<head>\n    <title>Example Domain</title>\n</head>\n</html>\n",
            )
        if host in ("ifconfig.me", "api.ipify.org", "icanhazip.com"):
            return text(
                200,
                ".".join(
                    str(rng.randint(lo, hi)) for lo, hi in ((20, 220), (0, 255), (0, 255), (1, 254))
                )
                + "\n",
            )
        return None

    handle.token_uuid = token_uuid  # type: ignore[attr-defined]
    handle.online = online  # type: ignore[attr-defined]
    return handle
