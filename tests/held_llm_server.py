"""The scripted LLM stub (:mod:`llm_stub_server`) with chat answers held back until the
test releases them: a model slower than anything a test waits for, without a clock.

``GET /v1/models`` (the start-up probe) answers at once; every chat request waits in
its handler thread until :meth:`HeldLLMServer.release`, then takes its scripted reply.
``held`` counts the requests waiting right now, ``asked`` every chat request so far.
"""

from __future__ import annotations

import threading
from typing import Any

from llm_stub_server import Reply, StubLLMServer

#: A safety cap only: a test releases its held requests before it ends.
HOLD_CAP_S = 900.0


class HeldLLMServer(StubLLMServer):
    """``with HeldLLMServer(default=Reply.text(...)) as stub:`` ... ``stub.release()``."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._gate = threading.Event()
        self._count = threading.Condition()
        self.held = 0
        self.asked = 0

    def _next(self) -> Reply:  # runs in the request's handler thread
        with self._count:
            self.held += 1
            self.asked += 1
            self._count.notify_all()
        self._gate.wait(HOLD_CAP_S)
        with self._count:
            self.held -= 1
            self._count.notify_all()
        return super()._next()

    def wait_held(self, n: int = 1, timeout: float = 300.0) -> None:
        """Until ``n`` requests are held (AssertionError after ``timeout``)."""
        with self._count:
            ok = self._count.wait_for(lambda: self.held >= n, timeout)
        assert ok, f"{self.held} of {n} requests held after {timeout} s"

    def release(self) -> None:
        """Answer the held requests, and any later one at once."""
        self._gate.set()

    def stop(self) -> None:
        self.release()  # no handler thread stays blocked
        super().stop()
