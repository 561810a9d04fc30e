"""A small WebSocket client (RFC 6455) on the standard library, for the
terminal: client frames masked, server frames unmasked, ping answered."""

import base64
import os
import socket
import ssl
import struct
import urllib.parse
from typing import Optional, Tuple

OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x1, 0x2, 0x8, 0x9, 0xA


class WebSocketError(Exception):
    pass


class WebSocket:
    def __init__(self, url: str, headers: Optional[dict] = None, timeout: float = 30,
                 ssl_context: Optional[ssl.SSLContext] = None, unix_path: Optional[str] = None):
        """unix_path connects to that Unix socket instead of the URL's
        host; ssl_context checks a wss URL's certificate (the system's
        CAs by default)."""
        u = urllib.parse.urlsplit(url)
        secure = u.scheme in ("wss", "https")
        port = u.port or (443 if secure else 80)
        if unix_path:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(unix_path)
        else:
            sock = socket.create_connection((u.hostname, port), timeout=timeout)
        if secure:
            sock = (ssl_context or ssl.create_default_context()).wrap_socket(sock, server_hostname=u.hostname)
        key = base64.b64encode(os.urandom(16)).decode()
        path = (u.path or "/") + ("?" + u.query if u.query else "")
        lines = [f"GET {path} HTTP/1.1", f"Host: {u.netloc}", "Upgrade: websocket", "Connection: Upgrade",
                 f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
        for k, v in (headers or {}).items():
            lines.append(f"{k}: {v}")
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self._sock = sock
        self._buf = b""
        head = self._read_until(b"\r\n\r\n")
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status + b" ":
            body = self._buf
            raise WebSocketError(f"handshake refused: {status.decode(errors='replace')} {body[:500].decode(errors='replace')}")
        sock.settimeout(None)

    def _read_until(self, marker: bytes) -> bytes:
        while marker not in self._buf:
            chunk = self._sock.recv(65536)
            if not chunk:
                raise WebSocketError("connection closed during the handshake")
            self._buf += chunk
        head, self._buf = self._buf.split(marker, 1)
        return head

    def _read(self, n: int) -> bytes:
        while len(self._buf) < n:
            chunk = self._sock.recv(65536)
            if not chunk:
                raise EOFError
            self._buf += chunk
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def send(self, data: bytes, opcode: int = OP_BINARY) -> None:
        mask = os.urandom(4)
        n = len(data)
        header = bytes([0x80 | opcode])
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self._sock.sendall(header + mask + masked)

    def recv(self) -> Tuple[int, bytes]:
        """The next data message: (opcode, payload); (OP_CLOSE, b"") at the end."""
        message, opcode = b"", None
        while True:
            try:
                b0, b1 = self._read(2)
            except EOFError:
                return OP_CLOSE, b""
            op, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            if n > 16 << 20:
                raise WebSocketError("a frame over 16 MiB")
            mask = self._read(4) if b1 & 0x80 else None
            payload = self._read(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if op == OP_PING:
                self.send(payload, OP_PONG)
                continue
            if op == OP_PONG:
                continue
            if op == OP_CLOSE:
                return OP_CLOSE, b""
            if op != 0:
                opcode = op
            message += payload
            if b0 & 0x80:
                return opcode or OP_BINARY, message

    def close(self) -> None:
        try:
            self.send(struct.pack(">H", 1000), OP_CLOSE)
        except OSError:
            pass
        self._sock.close()
