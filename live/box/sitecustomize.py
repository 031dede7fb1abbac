"""Loaded by every ``python3`` the agent runs in a live run (the ``python3`` tool puts
this folder first on its path): the container's network and clock for Python code.

Names resolve as the container's resolver would (the task's hosts, the container's own
name), connections go where those hosts really listen, and ``time.sleep`` sleeps on
the run's virtual clock. Nothing else of Python changes.
"""

from __future__ import annotations

import socket
import ssl
import time

import livebox

_FACTS = livebox.net()
_real_getaddrinfo = socket.getaddrinfo
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
    if host is None or isinstance(host, bytes):
        return _real_getaddrinfo(host, port, family, type, proto, flags)
    ip = livebox.resolve(str(host), _FACTS)
    if ip is None:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return _real_getaddrinfo(ip, port, socket.AF_INET, type, proto, flags)


def _target(address):
    if isinstance(address, tuple) and len(address) >= 2 and isinstance(address[0], str):
        return livebox.route(address[0], int(address[1]), _FACTS)
    return address


def _connect(self, address):
    return _real_connect(self, _target(address))


def _connect_ex(self, address):
    return _real_connect_ex(self, _target(address))


def _gethostbyname(name):
    ip = livebox.resolve(name, _FACTS)
    if ip is None:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return ip


socket.getaddrinfo = _getaddrinfo
socket.socket.connect = _connect
socket.socket.connect_ex = _connect_ex
socket.gethostname = lambda: _FACTS["hostname"]
socket.gethostbyname = _gethostbyname
time.sleep = livebox.virtual_sleep
livebox.compress_socket_waits(socket.socket)
# Outside hosts are answered by the run's sink, whose certificate stands for theirs.
ssl._create_default_https_context = ssl._create_unverified_context
