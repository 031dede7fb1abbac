"""Requests to hosts other than the target: the public internet may or may not be
reachable from the agent's box, and the agent's own listeners answer on its address."""

from __future__ import annotations

from monsearch.synth.agent import Agent, External
from monsearch.synth.observations import Response, html, jres, text
from monsearch.synth.request import Req


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
            return text(200, "ok\n") if kind != "echo" else text(200, r.body_text())
        if not online:
            return None
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
