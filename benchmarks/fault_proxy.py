"""A TCP proxy between chosen workers and the database server that brings the faults a
network brings, in the shape of Toxiproxy: held traffic (a partition, a hung middlebox, a NAT
that dropped the flow, before TCP gives up), added latency, a reset, and a half-open close.

One thread serves every connection through a selector. The faults apply to every connection
of the proxy, those opened during the fault too:

- :meth:`FaultProxy.hold` stops forwarding in both directions and keeps both sockets open;
  :meth:`FaultProxy.heal` forwards again, what was held first, as TCP delivers a segment
  retransmitted across a partition that healed. A connection opened while held completes its
  TCP handshake with the proxy and then hears nothing, as a client sees a server whose
  answers are lost.
- :meth:`FaultProxy.delay` adds latency to each chunk, each way.
- :meth:`FaultProxy.reset` ends every connection with a TCP reset, on both sides.
- :meth:`FaultProxy.half_open` closes the server's side of every connection and holds the
  client's: the server sees the session end, the client sees silence.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

CHUNK = 65536


@dataclass
class _Side:
    sock: socket.socket
    # Chunks read from the other side, to send here once their time has come.
    pending: list[tuple[float, bytes]] = field(default_factory=list)
    closed: bool = False


@dataclass
class _Pair:
    client: _Side
    server: _Side
    dangling: bool = False  # the server's side was closed: the client's is held for ever

    def other(self, side: _Side) -> _Side:
        return self.server if side is self.client else self.client


class FaultProxy:
    """Forward ``127.0.0.1:port`` to ``upstream``, with faults switched on and off at will."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.setblocking(False)
        self.port: int = self._listener.getsockname()[1]
        self._selector = selectors.DefaultSelector()
        self._pairs: list[_Pair] = []
        self._held = False
        self._latency = 0.0
        self._actions: list[str] = []
        self._lock = threading.Lock()
        self._waker_r, self._waker_w = socket.socketpair()
        self._waker_r.setblocking(False)
        self._stopping = False
        self._thread = threading.Thread(target=self._serve, name="fault-proxy", daemon=True)

    # --- control, from any thread ---------------------------------------------------------

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping = True
        self._poke()
        self._thread.join(timeout=5)
        for pair in self._pairs:
            self._close(pair.client)
            self._close(pair.server)
        self._listener.close()
        self._waker_r.close()
        self._waker_w.close()

    def hold(self) -> None:
        """Stop forwarding, both ways, keeping every socket open."""
        self._set(held=True)

    def heal(self) -> None:
        """Forward again, what was held first."""
        self._set(held=False)

    def delay(self, seconds: float) -> None:
        """Add ``seconds`` of latency to every chunk, each way (0: none)."""
        with self._lock:
            self._latency = seconds
        self._poke()

    def reset(self) -> None:
        """End every connection now with a TCP reset, on both sides."""
        self._do("reset")

    def half_open(self) -> None:
        """Close the server's side of every connection now and hold the client's."""
        self._do("half_open")

    def connections(self) -> int:
        """The connections forwarded now (not those left dangling by a half-open close)."""
        with self._lock:
            return sum(1 for pair in self._pairs if not pair.dangling)

    def _set(self, *, held: bool) -> None:
        with self._lock:
            self._held = held
        self._poke()

    def _do(self, action: str) -> None:
        done = threading.Event()
        with self._lock:
            self._actions.append(action)
        self._poke()
        # Applied by the proxy's thread at its next turn; wait for it so the caller knows.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with self._lock:
                if action not in self._actions:
                    done.set()
                    break
            time.sleep(0.005)
        if not done.is_set():
            raise AssertionError(f"the fault proxy did not apply {action!r}")

    def _poke(self) -> None:
        with contextlib.suppress(OSError):
            self._waker_w.send(b"x")

    # --- the proxy's thread -----------------------------------------------------------------

    def _serve(self) -> None:
        self._selector.register(self._listener, selectors.EVENT_READ, "accept")
        self._selector.register(self._waker_r, selectors.EVENT_READ, "wake")
        while not self._stopping:
            self._apply_actions()
            self._refresh_interest()
            timeout = self._next_send_in()
            for key, _ in self._selector.select(timeout):
                if key.data == "accept":
                    self._accept()
                elif key.data == "wake":
                    with contextlib.suppress(BlockingIOError):
                        self._waker_r.recv(4096)
                else:
                    self._read(*key.data)
            self._send_due()

    def _accept(self) -> None:
        try:
            client, _ = self._listener.accept()
        except BlockingIOError:
            return
        try:
            server = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            client.close()
            return
        for sock in (client, server):
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pair = _Pair(_Side(client), _Side(server))
        with self._lock:
            self._pairs.append(pair)

    def _refresh_interest(self) -> None:
        """Read a side only while traffic flows (held: the kernel's buffers hold it)."""
        with self._lock:
            held = self._held
            pairs = list(self._pairs)
        for pair in pairs:
            for side in (pair.client, pair.server):
                if side.closed:
                    continue
                wanted = not held and not pair.dangling
                registered = side.sock in self._selector.get_map()
                if wanted and not registered:
                    self._selector.register(side.sock, selectors.EVENT_READ, (pair, side))
                elif not wanted and registered:
                    self._selector.unregister(side.sock)

    def _read(self, pair: _Pair, side: _Side) -> None:
        try:
            data = side.sock.recv(CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # that side closed: close the other, as a TCP peer would
            self._drop(pair)
            return
        with self._lock:
            latency = self._latency
        pair.other(side).pending.append((time.monotonic() + latency, data))

    def _send_due(self) -> None:
        with self._lock:
            if self._held:
                return
            pairs = list(self._pairs)
        now = time.monotonic()
        for pair in pairs:
            if pair.dangling:
                continue
            for side in (pair.client, pair.server):
                while side.pending and side.pending[0][0] <= now and not side.closed:
                    _, data = side.pending[0]
                    try:
                        sent = side.sock.send(data)
                    except BlockingIOError:
                        break
                    except OSError:
                        self._drop(pair)
                        break
                    if sent < len(data):
                        side.pending[0] = (0.0, data[sent:])
                        break
                    side.pending.pop(0)

    def _next_send_in(self) -> float | None:
        """How long the selector may wait: until the first chunk due, or for ever."""
        with self._lock:
            if self._held:
                return None
            due = [
                side.pending[0][0]
                for pair in self._pairs
                if not pair.dangling
                for side in (pair.client, pair.server)
                if side.pending
            ]
        if not due:
            return None
        # A chunk due already waits for room in its socket's buffer: look again shortly.
        return max(0.005, min(due) - time.monotonic())

    def _apply_actions(self) -> None:
        with self._lock:
            actions = list(self._actions)
            pairs = list(self._pairs)
        for action in actions:
            for pair in pairs:
                if action == "reset":
                    self._abort(pair.client)
                    self._abort(pair.server)
                    self._forget(pair)
                elif action == "half_open" and not pair.dangling:
                    self._close(pair.server)
                    pair.dangling = True
            with self._lock:
                self._actions.remove(action)

    def _drop(self, pair: _Pair) -> None:
        self._close(pair.client)
        self._close(pair.server)
        self._forget(pair)

    def _forget(self, pair: _Pair) -> None:
        with self._lock:
            if pair in self._pairs:
                self._pairs.remove(pair)

    def _close(self, side: _Side) -> None:
        if side.closed:
            return
        side.closed = True
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(side.sock)
        side.sock.close()

    def _abort(self, side: _Side) -> None:
        """Close with a reset (SO_LINGER 0), not a FIN."""
        if not side.closed:
            with contextlib.suppress(OSError):
                side.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self._close(side)
