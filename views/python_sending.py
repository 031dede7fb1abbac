"""Recording what Python code sends: urllib requests and openers, ``requests`` / ``httpx`` /
``aiohttp`` calls and sessions, ``http.client`` connections and raw sockets, each as a
:class:`~monsearch.views.request.Request` with the loop multiplier in force.
"""

from __future__ import annotations

import re
from typing import Any

from monsearch.views.python_values import (
    _LIB_CLIENT,
    Func,
    Obj,
    Unknown,
    _json_text,
    _known,
    _text,
    _urlencode,
)
from monsearch.views.request import (
    Request,
    normalise_url,
)


class RequestRecording:
    """Recording: turn a send into a Request of the output."""

    def connect(self, sock: Obj, addr: Any) -> None:
        if isinstance(addr, (tuple, list)) and len(addr) >= 2:
            sock.attrs["host"] = _text(addr[0]).lower()
            sock.attrs["port"] = addr[1] if isinstance(addr[1], int) else None

    def make_request(self, args: list[Any], kwargs: dict[str, Any]) -> Obj:
        url = args[0] if args else kwargs.get("url", "")
        data = args[1] if len(args) > 1 else kwargs.get("data")
        headers = args[2] if len(args) > 2 else kwargs.get("headers", {})
        method = (
            kwargs.get("method") if "method" in kwargs else (args[5] if len(args) > 5 else None)
        )
        return Obj(
            "request",
            url=url,
            data=data,
            headers=dict(headers) if isinstance(headers, dict) else {},
            method=method,
        )

    def urlopen(self, args: list[Any], kwargs: dict[str, Any], opener: Obj | None = None) -> Obj:
        target = args[0] if args else kwargs.get("url", kwargs.get("fullurl"))
        data = args[1] if len(args) > 1 else kwargs.get("data")
        opener = opener or self.opener
        extra: dict[Any, Any] = {}
        added = opener.attrs.get("addheaders") if opener is not None else None
        if isinstance(added, (list, tuple)):
            for pair in added:
                if isinstance(pair, (list, tuple)) and len(pair) == 2:
                    extra[_text(pair[0])] = pair[1]
        if isinstance(target, Obj) and target.kind == "request":
            a = target.attrs
            body = a.get("data") if data is None else data
            method = a.get("method")
            if isinstance(a.get("get_method"), Func):
                method = self.call_func(a["get_method"], [], {})
            method_s = (
                _text(method).upper()
                if method is not None and _known(method)
                else ("POST" if body is not None else "GET")
            )
            if isinstance(method, Unknown):
                method_s = "{" + method.text + "}"
            headers = a.get("headers", {})
            if extra:
                headers = {**extra, **headers} if isinstance(headers, dict) else extra
            self.record_parts("python_urllib", method_s, a.get("url"), headers, body)
        else:
            method_s = "POST" if data is not None else "GET"
            self.record_parts("python_urllib", method_s, target, extra, data)
        return Obj("response")

    def send_lib(
        self, lib: str, method: str, url: Any, kwargs: dict[str, Any], session: dict[str, Any]
    ) -> Obj:
        client = _LIB_CLIENT.get(lib, "python_httpx")
        headers = dict(session.get("headers") or {})
        if isinstance(kwargs.get("headers"), dict):
            headers.update(kwargs["headers"])
        base = session.get("base_url")
        if base is not None and isinstance(url, str) and not re.match(r"^[a-z]+://", url):
            url = _text(base).rstrip("/") + "/" + url.lstrip("/")
        body: Any = None
        form: dict[str, str] = {}
        content_type = None
        if "json" in kwargs and kwargs["json"] is not None:
            body = _json_text(kwargs["json"])
            if body is None:
                body = Unknown("…")
            content_type = "application/json"
        elif "data" in kwargs and kwargs["data"] is not None or "content" in kwargs:
            data = kwargs.get("data", kwargs.get("content"))
            if isinstance(data, dict):
                form = {_text(k): _text(v) for k, v in data.items()}
                body = _urlencode(form)
                content_type = "application/x-www-form-urlencoded"
            else:
                body = data
        files: list[dict[str, str]] = []
        if isinstance(kwargs.get("files"), dict):
            for field, spec in kwargs["files"].items():
                files.append(self.file_spec(_text(field), spec))
            content_type = "multipart/form-data"
        params = kwargs.get("params")
        if isinstance(params, dict) and url is not None:
            qs = _text(_urlencode({_text(k): _text(v) for k, v in params.items()}))
            u = _text(url)
            url = f"{u}{'&' if '?' in u else '?'}{qs}"
        if content_type and not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = content_type
        req = self.record_parts(client, method, url, headers, body)
        if req is not None:
            if form:
                req.form = form
            if files:
                req.files = files
                req.form = form
            auth = kwargs.get("auth", session.get("auth"))
            if isinstance(auth, (tuple, list)) and len(auth) == 2:
                req.auth_user = _text(auth[0])
                req.auth_password = _text(auth[1])
        return Obj("response")

    def file_spec(self, field: str, spec: Any) -> dict[str, str]:
        if isinstance(spec, (tuple, list)) and spec:
            name = _text(spec[0])
            content = spec[1] if len(spec) > 1 else ""
            if isinstance(content, Obj) and content.kind == "file":
                content = self.files(content.attrs["path"]) or ""
            return {
                "field": field,
                "filename": name,
                "content": _text(content) if _known(content) else "",
            }
        if isinstance(spec, Obj) and spec.kind == "file":
            path = spec.attrs["path"]
            return {
                "field": field,
                "filename": path.rsplit("/", 1)[-1],
                "content": self.files(path) or "",
            }
        return {
            "field": field,
            "filename": field,
            "content": _text(spec) if isinstance(spec, str) else "",
        }

    def emit_conn(
        self, conn: Obj, method: str, path: str, body: Any, headers: dict[Any, Any]
    ) -> Request | None:
        host = conn.attrs.get("host", "")
        port = conn.attrs.get("port")
        hp = host if "://" in host else f"{conn.attrs['scheme']}://{host}"
        if port and f":{port}" not in hp.split("//", 1)[-1]:
            hp += f":{port}"
        url = (
            path
            if path.startswith(("http://", "https://"))
            else hp + (path if path.startswith("/") else "/" + path)
        )
        return self.record_parts("python_http_client", method.upper(), url, headers, body)

    def record_parts(
        self, client: str, method: str, url: Any, headers: dict[Any, Any], body: Any
    ) -> Request | None:
        if url is None:
            return None
        u = _text(url)
        if not u:
            return None
        if isinstance(body, Obj) and body.kind == "file":
            body = self.files(body.attrs["path"]) or ""
        body_text = (
            ""
            if body is None
            else (
                _text(body)
                if not isinstance(body, (dict, list))
                else _text(_urlencode({_text(k): _text(v) for k, v in body.items()}))
                if isinstance(body, dict)
                else _text(body)
            )
        )
        hdrs = (
            {_text(k).lower(): _text(v) for k, v in headers.items()}
            if isinstance(headers, dict)
            else {}
        )
        req = Request(
            method=method or "GET",
            url=normalise_url(u),
            client=client,
            headers=hdrs,
            body=body_text,
        )
        self.record(req)
        return req

    def record(self, req: Request) -> None:
        req.repeat = self.mult
        req.repeat_known = self.mult_known
        if len(self.out) < 2000:
            self.out.append(req)
