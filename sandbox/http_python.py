"""HTTP requests in Python code the agent ran (placeholder: regex reading; AST reader follows)."""

from __future__ import annotations

import re
from collections.abc import Callable

from monsearch.sandbox.http_extract import Request, normalise_url

FileLookup = Callable[[str], "str | None"]

_CALL = re.compile(r"""(?:requests|httpx)\.(get|post|put|patch|delete|head|options)\(\s*[fr]?['"]([^'"]+)['"]""")
_URLOPEN = re.compile(r"""urlopen\(\s*[fr]?['"]([^'"]+)['"]""")


def python_requests(code: str, files: FileLookup) -> list[Request]:
    out: list[Request] = []
    for m in _CALL.finditer(code):
        out.append(Request(method=m.group(1).upper(), url=normalise_url(m.group(2)), client="python_requests"))
    for m in _URLOPEN.finditer(code):
        out.append(Request(method="GET", url=normalise_url(m.group(1)), client="python_urllib"))
    return out
