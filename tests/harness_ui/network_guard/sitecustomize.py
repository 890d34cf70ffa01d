# Loaded by every Python process that has this folder on PYTHONPATH (site imports sitecustomize at start-up):
# tests/harness_ui runs the a13n-harness-ui driver so. An audit hook refuses each attempt to reach the network:
# a name looked up (socket.getaddrinfo, gethostbyname, ...) that is not the machine's own, and any connection
# or datagram over IP, loopback included (the proxies the test sets point at a closed loopback port, so a
# client that honours them lands here too). The call raises OSError at once, so nothing waits for a time-out,
# and the attempt is appended to the file $HARNESS_UI_NETWORK_LOG with the stack that made it, so an attempt a
# library catches (a background updater logs it and retries) is still seen. Unix sockets (asyncio's wake-up
# pair) are let through.

from __future__ import annotations

import ipaddress
import os
import socket
import sys
import traceback

_LOG = os.environ.get("HARNESS_UI_NETWORK_LOG")
_LOOKUPS = {"socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex", "socket.gethostbyaddr",
            "socket.getnameinfo"}
_SENDS = {"socket.connect", "socket.sendto", "socket.sendmsg"}


def _local(host: object) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host in ("", "localhost") or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _refuse(event: str, args: tuple[object, ...]) -> None:
    if event in _LOOKUPS:
        target: object = args[0] if event != "socket.getnameinfo" else args[0]
        host = target[0] if isinstance(target, tuple) else target
    elif event in _SENDS:
        sock, address = args[0], args[1]
        if getattr(sock, "family", None) not in (socket.AF_INET, socket.AF_INET6) or address is None:
            return
        host = address[0] if isinstance(address, tuple) else address
        host = f"{host}:{address[1]}" if isinstance(address, tuple) else host
    else:
        return
    if event in _LOOKUPS and _local(host):
        return
    if _LOG:
        with open(_LOG, "a", encoding="utf-8") as log:
            where = "".join(traceback.format_stack(limit=40)[:-2])
            log.write(f"{event} {host!r} (pid {os.getpid()})\n{where}\n")
    raise OSError(f"network guard: {event} to {host!r} refused (the harness-ui check runs offline)")


sys.addaudithook(_refuse)
