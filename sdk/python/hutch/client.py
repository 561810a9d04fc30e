"""The client: Hutch talks to the daemon's REST API; Sandbox acts on one
sandbox; streams are iterators of events."""

import base64
import http.client
import json
import os
import socket
import ssl
import stat
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional

from .ws import OP_CLOSE, OP_TEXT, WebSocket

DEFAULT_URL = "http://127.0.0.1:3111"
# The daemon's local Unix socket as the package installs it: used when no
# URL is given ($HUTCH_URL) and it exists.
DEFAULT_SOCKET = "/run/hutch/hutch.sock"

# The most bytes Files.download yields unless its max_bytes says otherwise:
# what comes from a sandbox is untrusted, its size included.
DEFAULT_MAX_DOWNLOAD = 1 << 30

# The timeout of a call that gives none: the client's.
_CLIENT_TIMEOUT: Any = object()


class HutchError(Exception):
    """An error the daemon answered: its S-code (code), message, whether a
    retry may succeed, and its fix."""

    def __init__(self, envelope: Dict[str, Any], status: int = 0):
        self.envelope = envelope
        self.code = envelope.get("code", "")
        self.message = envelope.get("message", "")
        self.retryable = bool(envelope.get("retryable", False))
        self.fix = envelope.get("fix")
        self.fix_note = envelope.get("fix_note", "")
        self.status = status
        super().__init__(f"{self.code}: {self.message}")


class DownloadTooLarge(Exception):
    """A download past its bound (Files.download's max_bytes): raised
    before any byte when the daemon announced the size, else once the
    stream passed the bound; nothing past it is yielded."""

    def __init__(self, limit: int, size: Optional[int] = None):
        self.limit = limit
        self.size = size
        what = f"{size} bytes, over" if size is not None else "over"
        super().__init__(f"the download is {what} the limit of {limit} bytes (max_bytes raises it)")


@dataclass
class Event:
    """One event of a stream: its type (stdout, stderr, log, ...) and data."""

    type: str
    data: Any


@dataclass
class ExecResult:
    """The result of a command."""

    stdout: str
    stderr: str
    exit_code: Optional[int]
    timed_out: bool = False
    duration_ms: int = 0
    # The timeout it ran with: the one asked for, or the daemon's default
    # (a timeout over the daemon's max_exec_timeout_ms is refused, S001).
    timeout_ms: int = 0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


class _Stream:
    """An iterator of a streaming call's events; .result is the final
    value once it is exhausted. Leaving the loop early (break, an
    exception) or close() ends the call; it is also a context manager."""

    def __init__(self, response):
        self._response = response
        self.result: Any = None

    def close(self) -> None:
        """End the call: the daemon sees its caller go."""
        self._response.close()

    def __enter__(self) -> "_Stream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __iter__(self) -> Iterator[Event]:
        try:
            for raw in self._response:
                line = json.loads(raw)
                kind = line.get("type")
                if kind == "result":
                    self.result = line.get("result")
                    return
                if kind == "error":
                    raise HutchError(line.get("error") or {})
                yield Event(kind, line.get("data"))
        finally:
            self._response.close()


class _UnixConnection(http.client.HTTPConnection):
    """HTTP over a Unix socket: the host of the URL is only its Host header."""

    def __init__(self, path: str, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self._path)


class _UnixHandler(urllib.request.HTTPHandler):
    def __init__(self, path: str):
        super().__init__()
        self._path = path

    def http_open(self, req):
        return self.do_open(lambda host, **kw: _UnixConnection(self._path, host, **kw), req)


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


class Hutch:
    """A connection to a hutch daemon.

    url is the daemon's ($HUTCH_URL); "unix:///path" is its local socket.
    With neither, the socket at $HUTCH_SOCKET (default DEFAULT_SOCKET) is
    used when it exists, else DEFAULT_URL. ca_cert ($HUTCH_CA_CERT) is a
    PEM file of the CAs an https URL's certificate must chain to;
    client_cert and client_key ($HUTCH_CLIENT_CERT, $HUTCH_CLIENT_KEY) a
    client certificate to present."""

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, timeout: float = 300,
                 ca_cert: Optional[str] = None, client_cert: Optional[str] = None, client_key: Optional[str] = None):
        env = os.environ.get
        url = url or env("HUTCH_URL")
        if not url:
            sock = env("HUTCH_SOCKET") or DEFAULT_SOCKET
            url = "unix://" + sock if _is_socket(sock) else DEFAULT_URL
        self.socket_path = url[len("unix://"):] if url.startswith("unix://") else None
        # Over the socket the URL's host is only the Host header.
        self.url = "http://localhost" if self.socket_path else url.rstrip("/")
        self.token = token if token is not None else env("HUTCH_TOKEN", "")
        self.timeout = timeout
        self.ssl_context = None
        ca_cert, client_cert = ca_cert or env("HUTCH_CA_CERT"), client_cert or env("HUTCH_CLIENT_CERT")
        if ca_cert or client_cert:
            self.ssl_context = ssl.create_default_context(cafile=ca_cert or None)
            if client_cert:
                self.ssl_context.load_cert_chain(client_cert, client_key or env("HUTCH_CLIENT_KEY") or None)
        if self.socket_path:
            self._opener = urllib.request.build_opener(_UnixHandler(self.socket_path))
        else:
            self._opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=self.ssl_context))
        self.networks = Networks(self)
        self.secrets = Secrets(self)
        self.volumes = Volumes(self)

    # The wire.

    def _open(self, method: str, path: str, body: Any = None, raw: Optional[bytes] = None,
              accept: str = "application/json", content_type: str = "application/json", timeout: Any = _CLIENT_TIMEOUT):
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Accept", accept)
        if data is not None:
            req.add_header("Content-Type", content_type)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            return self._opener.open(req, timeout=self.timeout if timeout is _CLIENT_TIMEOUT else timeout)
        except urllib.error.HTTPError as e:
            try:
                envelope = json.loads(e.read()).get("error") or {}
            except ValueError:
                envelope = {"code": str(e.code), "message": e.reason}
            raise HutchError(envelope, e.code) from None

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """One call of the REST API; the decoded answer."""
        with self._open(method, path, body) as resp:
            payload = resp.read()
        return json.loads(payload) if payload else None

    def stream(self, method: str, path: str, body: Any = None, timeout: Any = _CLIENT_TIMEOUT) -> _Stream:
        """A streaming call: an iterator of its events (NDJSON). timeout
        bounds each wait for the next event (the client's by default;
        None waits as long as it takes)."""
        return _Stream(self._open(method, path, body, accept="application/x-ndjson", timeout=timeout))

    def call(self, function_id: str, payload: Optional[Dict[str, Any]] = None) -> Any:
        """Any function of the table by id (/v1/functions/{id})."""
        return self.request("POST", "/v1/functions/" + urllib.parse.quote(function_id, safe=":"), payload or {})

    # Sandboxes.

    def create(self, image: str = "python", **options: Any) -> "Sandbox":
        """Create a sandbox (options: cpus, memory_mb, network, env,
        idle_timeout_secs, timeout_secs, metadata, template, snapshot_id,
        volumes, runtime...). runtime is "gvisor" or "microvm" (the
        daemon's default_runtime when left out). network is True for outbound networking, or an egress
        policy {"allow_out": [...], "deny_out": [...]}; volumes mount the
        caller's volumes: [{"name", "path", "read_only"}]; preview is its
        ports' terms: {"host_header": "app.test:${PORT}", "private": True}."""
        res = self.request("POST", "/v1/sandboxes", dict(options, image=image))
        return Sandbox(self, res["sandbox_id"], res.get("image", image))

    def connect(self, sandbox_id: str) -> "Sandbox":
        """A sandbox that exists: its description is checked."""
        info = self.request("GET", "/v1/sandboxes/" + _q(sandbox_id))
        return Sandbox(self, info["sandbox_id"], info.get("image", ""))

    def list(self) -> List[Dict[str, Any]]:
        return self.request("GET", "/v1/sandboxes")["sandboxes"]

    def events(self, **query: Any) -> List[Dict[str, Any]]:
        """The caller's events (sandbox_id, type, since, after, limit)."""
        return self.request("GET", "/v1/events" + _query(query))["events"]

    # issue 38
    def quota(self) -> Dict[str, Any]:
        """The caller's use against its quota: {owner, items: [{name, used, limit, key}]}."""
        return self.request("GET", "/v1/quota")


class Sandbox:
    """One sandbox; a context manager that stops it at the end."""

    def __init__(self, client: Hutch, sandbox_id: str, image: str = ""):
        self.client = client
        self.id = sandbox_id
        self.image = image
        self.files = Files(self)
        self.processes = Processes(self)
        self.code = Code(self)
        self.ports = Ports(self)
        self.env = Env(self)
        self.network = Network(self)
        self.git = Git(self)

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.stop()
        except HutchError as e:
            if e.code not in ("S002", "S004"):
                raise

    def __repr__(self) -> str:
        return f"Sandbox({self.id!r}, image={self.image!r})"

    def _path(self, rest: str = "") -> str:
        return "/v1/sandboxes/" + _q(self.id) + rest

    def info(self) -> Dict[str, Any]:
        return self.client.request("GET", self._path())

    def stop(self) -> None:
        self.client.request("DELETE", self._path("?wait=true"))

    def exec(self, *argv: str, env: Optional[Dict[str, str]] = None, workdir: str = "",
             timeout_ms: int = 0, stdin: Optional[bytes] = None) -> ExecResult:
        """Run a command and wait for it: its output, capped by the daemon."""
        res = self.client.request("POST", self._path("/exec"), _exec_body(argv, env, workdir, timeout_ms, stdin))
        return _exec_result(res, res.get("stdout", ""), res.get("stderr", ""))

    def exec_stream(self, *argv: str, env: Optional[Dict[str, str]] = None, workdir: str = "",
                    timeout_ms: int = 0) -> _Stream:
        """Run a command, its output as events (start, stdout, stderr,
        exit) as it is written; .result is the end once iterated."""
        return self.client.stream("POST", self._path("/exec?stream=true"), _exec_body(argv, env, workdir, timeout_ms, None))

    def pause(self, hibernate: bool = False) -> Dict[str, Any]:
        return self.client.request("POST", self._path("/pause"), {"depth": "hibernate" if hibernate else "freeze"})

    def resume(self) -> Dict[str, Any]:
        return self.client.request("POST", self._path("/resume"), {})

    def snapshot(self) -> Dict[str, Any]:
        return self.client.request("POST", self._path("/snapshots"), {})

    def fork(self, count: int = 1) -> List["Sandbox"]:
        res = self.client.request("POST", self._path("/fork"), {"count": count})
        return [Sandbox(self.client, i, self.image) for i in res["sandbox_ids"]]

    def metrics(self) -> Dict[str, Any]:
        return self.client.request("GET", self._path("/metrics"))

    def pty(self, cols: int = 80, rows: int = 24, cmd: Optional[List[str]] = None) -> "Terminal":
        """A terminal: a login shell (or cmd) on a PTY, over a WebSocket."""
        params = [("cols", cols), ("rows", rows)] + [("cmd", c) for c in (cmd or [])]
        url = self.client.url.replace("http", "ws", 1) + self._path("/pty?" + urllib.parse.urlencode(params))
        headers = {"Authorization": "Bearer " + self.client.token} if self.client.token else {}
        return Terminal(WebSocket(url, headers, ssl_context=self.client.ssl_context, unix_path=self.client.socket_path))

    def logs(self, follow: bool = False, tag: str = "") -> _Stream:
        """Its background processes' output as log events."""
        return self.client.stream("GET", self._path("/logs" + _query({"follow": follow or None, "tag": tag or None})))


class Terminal:
    """A terminal: write() what is typed, read() what it shows (None once
    its process exited: exit_code says how)."""

    def __init__(self, ws: WebSocket):
        self._ws = ws
        self.exit_code: Optional[int] = None

    def write(self, data: Any) -> None:
        self._ws.send(data.encode() if isinstance(data, str) else data)

    def resize(self, cols: int, rows: int) -> None:
        self._ws.send(json.dumps({"type": "resize", "cols": cols, "rows": rows}).encode(), OP_TEXT)

    def read(self) -> Optional[bytes]:
        while True:
            op, data = self._ws.recv()
            if op == OP_CLOSE:
                return None
            if op == OP_TEXT:
                ctl = json.loads(data)
                if ctl.get("type") == "exit":
                    self.exit_code = ctl.get("exit_code")
                continue
            return data

    def close(self) -> None:
        self._ws.close()

    def __enter__(self) -> "Terminal":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Files:
    """A sandbox's files. Every operation takes user: a user of the image
    (a name or uid[:gid]) it runs as for that one call."""

    def __init__(self, sandbox: Sandbox):
        self._sb = sandbox

    def _op(self, op: str, user: str = "", **body: Any) -> Any:
        if user:
            body["user"] = user
        return self._sb.client.request("POST", self._sb._path("/fs/" + op), body)

    def write(self, path: str, content: Any, mode: str = "", parents: bool = True, user: str = "") -> Dict[str, Any]:
        """Write text (str) or bytes to a file."""
        body: Dict[str, Any] = {"path": path, "parents": parents}
        if isinstance(content, bytes):
            body["content_b64"] = base64.b64encode(content).decode()
        else:
            body["content"] = content
        if mode:
            body["mode"] = mode
        return self._op("write", user, **body)

    def read(self, path: str, user: str = "") -> bytes:
        """A file's bytes (up to 1 MiB; download() streams any size)."""
        res = self._op("read", user, path=path)
        if res.get("body") is not None:
            return res["body"].encode()
        return base64.b64decode(res.get("content_b64") or "")

    def read_text(self, path: str, user: str = "") -> str:
        return self.read(path, user).decode()

    def list(self, path: str, user: str = "") -> List[Dict[str, Any]]:
        return self._op("ls", user, path=path)["entries"]

    def stat(self, path: str, user: str = "") -> Dict[str, Any]:
        return self._op("stat", user, path=path)

    def mkdir(self, path: str, parents: bool = True, user: str = "") -> None:
        self._op("mkdir", user, path=path, parents=parents)

    def remove(self, path: str, recursive: bool = False, user: str = "") -> None:
        self._op("rm", user, path=path, recursive=recursive)

    def move(self, src: str, dst: str, user: str = "") -> None:
        self._op("mv", user, src=src, dst=dst)

    def grep(self, path: str, pattern: str, user: str = "") -> List[Dict[str, Any]]:
        return self._op("grep", user, path=path, pattern=pattern)["matches"]

    def upload(self, path: str, stream, mode: str = "", user: str = "") -> Dict[str, Any]:
        """Stream a file object (or bytes) into path."""
        data = stream if isinstance(stream, bytes) else stream.read()
        q = _query({"path": path, "mode": mode or None, "parents": "true", "user": user or None})
        with self._sb.client._open("PUT", self._sb._path("/files" + q), raw=data, content_type="application/octet-stream") as resp:
            return json.loads(resp.read())

    def download(self, path: str, chunk: int = 64 << 10, user: str = "",
                 max_bytes: int = DEFAULT_MAX_DOWNLOAD) -> Iterator[bytes]:
        """A file's bytes, streamed: at most max_bytes of them (1 GiB by
        default; 0 for no bound), else DownloadTooLarge."""
        q = _query({"path": path, "user": user or None})
        resp = self._sb.client._open("GET", self._sb._path("/files" + q), accept="application/octet-stream")
        try:
            size = resp.headers.get("Content-Length")
            if max_bytes > 0 and size is not None and int(size) > max_bytes:
                raise DownloadTooLarge(max_bytes, int(size))
            left = max_bytes
            while True:
                piece = resp.read(chunk if max_bytes <= 0 else max(1, min(chunk, left)))
                if not piece:
                    return
                if max_bytes > 0:
                    if left == 0:
                        raise DownloadTooLarge(max_bytes)
                    left -= len(piece)
                yield piece
        finally:
            resp.close()

    def watch(self, path: str, recursive: bool = False, user: str = "", timeout: Optional[float] = None) -> _Stream:
        """Follow the changes under a directory: an "open" event once the
        watch is in place, then a "change" event per change ({type, path,
        old_path, is_dir}; type create, write, remove, rename or chmod),
        and "overflow" when changes were lost. It runs until the caller
        stops iterating (or close()), the directory is removed or the
        sandbox stops (HutchError S004). timeout bounds each wait for the
        next event (None: as long as it takes)."""
        q = _query({"path": path, "recursive": recursive or None, "user": user or None})
        return self._sb.client.stream("GET", self._sb._path("/fs/watch" + q), timeout=timeout)


class Processes:
    """A sandbox's background processes."""

    def __init__(self, sandbox: Sandbox):
        self._sb = sandbox

    def _p(self, pid: int, rest: str = "") -> str:
        return self._sb._path(f"/processes/{int(pid)}{rest}")

    def start(self, *argv: str, tag: str = "", stdin: bool = False, env: Optional[Dict[str, str]] = None,
              workdir: str = "") -> int:
        """Start a process that outlives the call; its pid."""
        body: Dict[str, Any] = {"argv": list(argv), "stdin": stdin}
        if tag:
            body["tag"] = tag
        if env:
            body["env"] = env
        if workdir:
            body["workdir"] = workdir
        return self._sb.client.request("POST", self._sb._path("/processes"), body)["pid"]

    def list(self) -> List[Dict[str, Any]]:
        return self._sb.client.request("GET", self._sb._path("/processes"))["processes"]

    def get(self, pid: int) -> Dict[str, Any]:
        return self._sb.client.request("GET", self._p(pid))

    def output(self, pid: int) -> Dict[str, Any]:
        return self._sb.client.request("GET", self._p(pid, "/output"))

    def follow(self, pid: int) -> _Stream:
        """Its output as events until it exits."""
        return self._sb.client.stream("GET", self._p(pid, "/output?follow=true"))

    def write_stdin(self, pid: int, data: Any, close: bool = False) -> None:
        body: Dict[str, Any] = {"close": close}
        if isinstance(data, bytes):
            body.update(data=base64.b64encode(data).decode(), base64=True)
        else:
            body["data"] = data
        self._sb.client.request("POST", self._p(pid, "/stdin"), body)

    def signal(self, pid: int, signal: str = "TERM") -> None:
        self._sb.client.request("POST", self._p(pid, "/signal"), {"signal": signal})

    def kill(self, pid: int) -> None:
        self._sb.client.request("DELETE", self._p(pid))

    def wait(self, pid: int, timeout_ms: int = 0) -> Dict[str, Any]:
        return self._sb.client.request("POST", self._p(pid, "/wait"), {"timeout_ms": timeout_ms})


class Ports:
    """A sandbox's exposed ports and their preview URLs."""

    def __init__(self, sandbox: Sandbox):
        self._sb = sandbox

    def expose(self, port: int, public: bool = False, expires_in_secs: int = 0, cors: Optional[List[str]] = None) -> str:
        """Make a port reachable; its preview URL."""
        body: Dict[str, Any] = {"port": port, "public": public}
        if expires_in_secs:
            body["expires_in_secs"] = expires_in_secs
        if cors:
            body["cors"] = cors
        info = self._sb.client.request("POST", self._sb._path("/ports"), body)
        return self._sb.client.url + info["url"]

    def list(self) -> List[Dict[str, Any]]:
        """The exposed ports: url is a path of the daemon's listener; host_url,
        with the daemon's preview_domain, the port's own host."""
        return self._sb.client.request("GET", self._sb._path("/ports"))["ports"]

    def unexpose(self, port: int) -> None:
        self._sb.client.request("DELETE", self._sb._path(f"/ports/{int(port)}"))


class Code:
    """The sandbox's code interpreter: contexts keep their state."""

    def __init__(self, sandbox: Sandbox):
        self._sb = sandbox

    def run(self, code: str, language: str = "", context_id: str = "", timeout_ms: int = 0,
            on_output=None) -> Dict[str, Any]:
        """Run a cell; on_output(event) gets its stdout and stderr as they
        come. The result: data (by MIME type), display, error, ..."""
        body: Dict[str, Any] = {"code": code}
        for k, v in (("language", language), ("context_id", context_id), ("timeout_ms", timeout_ms)):
            if v:
                body[k] = v
        stream = self._sb.client.stream("POST", self._sb._path("/run-code"), body)
        for event in stream:
            if on_output is not None:
                on_output(event)
        return stream.result

    def create_context(self, language: str = "python", cwd: str = "") -> str:
        body = {"language": language}
        if cwd:
            body["cwd"] = cwd
        return self._sb.client.request("POST", self._sb._path("/contexts"), body)["context_id"]

    def contexts(self) -> List[Dict[str, Any]]:
        return self._sb.client.request("GET", self._sb._path("/contexts"))["contexts"]

    def interrupt(self, context_id: str) -> None:
        self._sb.client.request("POST", f"/v1/contexts/{_q(context_id)}/interrupt")

    def restart(self, context_id: str) -> None:
        self._sb.client.request("POST", f"/v1/contexts/{_q(context_id)}/restart")


class Env:
    """A sandbox's own environment, under every later exec's, process's and
    context's (running ones keep theirs)."""

    def __init__(self, sandbox: Sandbox):
        self._sb = sandbox

    def list(self) -> Dict[str, Any]:
        """{"env": its own variables, "effective": what an exec starts from}."""
        return self._sb.client.request("GET", self._sb._path("/env"))

    def get(self, key: str) -> Optional[str]:
        """A variable of the effective environment; None when it is not set."""
        res = self._sb.client.request("GET", self._sb._path("/env/" + _q(key)))
        return res["value"] if res.get("set") else None

    def set(self, env: Optional[Dict[str, str]] = None, **variables: str) -> Dict[str, Any]:
        """Add or replace variables (a dict, keywords or both); the
        environment after, as list() answers it."""
        return self._sb.client.request("POST", self._sb._path("/env"), {"env": dict(env or {}, **variables)})

    def delete(self, *keys: str) -> Dict[str, Any]:
        """Remove variables (one of the image's goes back to the image's
        value); the environment after."""
        if not keys:
            raise ValueError("env.delete needs a key")
        res: Dict[str, Any] = {}
        for key in keys:
            res = self._sb.client.request("DELETE", self._sb._path("/env/" + _q(key)))
        return res


class Network:
    """A sandbox's network (it was created with network)."""

    def __init__(self, sandbox: Sandbox):
        self._sb = sandbox

    def update(self, policy: Optional[Dict[str, Any]] = None, allow_out: Optional[List[str]] = None,
               deny_out: Optional[List[str]] = None) -> Dict[str, Any]:
        """Replace its egress policy ({"allow_out", "deny_out"}, or those
        keywords; nothing lifts it). The answer: address, allow_out,
        deny_out, networks, egress_denied."""
        body = dict(policy or {})
        if allow_out is not None:
            body["allow_out"] = allow_out
        if deny_out is not None:
            body["deny_out"] = deny_out
        return self._sb.client.request("POST", self._sb._path("/network"), body)


class Secrets:
    """The caller's secrets, which egress transforms write into sandboxes'
    HTTPS requests ({{secret.NAME}}); a value is never answered."""

    def __init__(self, client: Hutch):
        self._c = client

    def set(self, name: str, value: str) -> Dict[str, Any]:
        return self._c.request("POST", "/v1/secrets", {"name": name, "value": value})

    def list(self) -> List[Dict[str, Any]]:
        """Each secret: name, placeholder, created_at, updated_at."""
        return self._c.request("GET", "/v1/secrets")["secrets"] or []

    def delete(self, name: str) -> Dict[str, Any]:
        return self._c.request("DELETE", "/v1/secrets/" + _q(name))

    def egress_log(self, sandbox_id: str) -> List[Dict[str, Any]]:
        """The egress proxy's recent decisions about a sandbox."""
        return self._c.request("GET", "/v1/sandboxes/" + _q(sandbox_id) + "/egress")["decisions"] or []


class Networks:
    """The caller's sandbox networks: members reach each other by name, id
    or address; nobody else reaches them."""

    def __init__(self, client: Hutch):
        self._c = client

    def create(self, name: str) -> Dict[str, Any]:
        return self._c.request("POST", "/v1/networks", {"name": name})

    def list(self) -> List[Dict[str, Any]]:
        """Each network: name, created_at, members ({sandbox_id, name, address})."""
        return self._c.request("GET", "/v1/networks")["networks"] or []

    def delete(self, name: str) -> Dict[str, Any]:
        return self._c.request("DELETE", "/v1/networks/" + _q(name))

    def connect(self, name: str, sandbox: Any) -> Dict[str, Any]:
        """Put a sandbox (or a sandbox id) on the network; the network after."""
        return self._c.request("POST", f"/v1/networks/{_q(name)}/members", {"sandbox_id": _sandbox_id(sandbox)})

    def disconnect(self, name: str, sandbox: Any) -> Dict[str, Any]:
        return self._c.request("DELETE", f"/v1/networks/{_q(name)}/members/{_q(_sandbox_id(sandbox))}")


class Volumes:
    """The caller's volumes: named file systems of a fixed size that outlive
    sandboxes, mounted at create (volumes=[{"name", "path", "read_only"}])."""

    def __init__(self, client: Hutch):
        self._c = client

    def create(self, name: str, size_mb: int = 0) -> Dict[str, Any]:
        """A new volume (size_mb: the daemon's default when 0)."""
        body: Dict[str, Any] = {"name": name}
        if size_mb:
            body["size_mb"] = size_mb
        return self._c.request("POST", "/v1/volumes", body)

    def list(self) -> List[Dict[str, Any]]:
        """Each volume: name, size_mb, created_at, sandbox_ids."""
        return self._c.request("GET", "/v1/volumes")["volumes"] or []

    def get(self, name: str) -> Dict[str, Any]:
        """A volume with its used_bytes and available_bytes."""
        return self._c.request("GET", "/v1/volumes/" + _q(name))

    def delete(self, name: str) -> Dict[str, Any]:
        """Delete a volume no live sandbox mounts (S262 otherwise)."""
        return self._c.request("DELETE", "/v1/volumes/" + _q(name))


class Git:
    """git in the sandbox, one operation a call (sandbox::git::{op}), each
    answering its structured result. Every operation takes the repository's
    path first (absolute; "" for the image's working directory) and the
    keywords user, env and timeout_ms; clone, fetch, pull and push take
    credentials for that one call (username and password, or token) and
    credentials_for, where they may go: a host (https) or an http(s) URL
    prefix, by default the host of a URL given; a remote given by name
    (whose URL the sandbox can change) needs it."""

    _TARGET = ("user", "env", "timeout_ms")

    def __init__(self, sandbox: Sandbox):
        self._sb = sandbox

    def _op(self, op: str, path: str, target: Dict[str, Any], exact: Optional[Dict[str, Any]] = None,
            **fields: Any) -> Dict[str, Any]:
        """POST op: fields and target without their unset values (None,
        False, "", []), exact as they are."""
        unknown = sorted(set(target) - set(self._TARGET))
        if unknown:
            raise TypeError(f"git {op}: unknown option {', '.join(unknown)}")
        body = {k: v for k, v in dict(fields, **target).items() if v is not None and v is not False and v != "" and v != []}
        body.update(exact or {})
        if path:
            body["path"] = path
        return self._sb.client.request("POST", self._sb._path("/git/" + op), body)

    def init(self, path: str = "", bare: bool = False, initial_branch: str = "", **target: Any) -> Dict[str, Any]:
        return self._op("init", path, target, bare=bare, initial_branch=initial_branch)

    def clone(self, url: str, path: str = "", branch: str = "", depth: int = 0, username: str = "",
              password: str = "", token: str = "", credentials_for: str = "", **target: Any) -> Dict[str, Any]:
        """Clone url into path (a directory named after the repository by
        default); origin is stored without credentials."""
        return self._op("clone", path, target, url=url, branch=branch, depth=depth or None,
                        username=username, password=password, token=token, credentials_for=credentials_for)

    def status(self, path: str = "", **target: Any) -> Dict[str, Any]:
        """branch, commit, upstream, ahead, behind, clean and files."""
        return self._op("status", path, target)

    def add(self, path: str = "", paths: Optional[List[str]] = None, **target: Any) -> Dict[str, Any]:
        """Stage paths (every change without); the status after."""
        return self._op("add", path, target, paths=paths)

    def commit(self, path: str, message: str, all: bool = False, allow_empty: bool = False, amend: bool = False,
               author_name: str = "", author_email: str = "", **target: Any) -> Dict[str, Any]:
        """{"commit": {hash, parents, author, email, date, subject}}."""
        return self._op("commit", path, target, message=message, all=all, allow_empty=allow_empty, amend=amend,
                        author_name=author_name, author_email=author_email)

    def diff(self, path: str = "", staged: bool = False, ref: str = "", paths: Optional[List[str]] = None,
             name_status: bool = False, max_bytes: int = 0, **target: Any) -> Dict[str, Any]:
        """{"diff": text, "truncated", "files" (with name_status)}."""
        return self._op("diff", path, target, staged=staged, ref=ref, paths=paths, name_status=name_status,
                        max_bytes=max_bytes or None)

    def log(self, path: str = "", ref: str = "", max_count: int = 0, skip: int = 0,
            paths: Optional[List[str]] = None, **target: Any) -> Dict[str, Any]:
        """{"commits": [...], newest first}."""
        return self._op("log", path, target, ref=ref, max_count=max_count or None, skip=skip or None, paths=paths)

    def branch(self, path: str = "", name: str = "", start_point: str = "", delete: bool = False,
               force: bool = False, remotes: bool = False, **target: Any) -> Dict[str, Any]:
        """The branches; with name, first creates (or deletes) it."""
        return self._op("branch", path, target, name=name, start_point=start_point, delete=delete, force=force,
                        remotes=remotes)

    def checkout(self, path: str, ref: str, create: bool = False, start_point: str = "", force: bool = False,
                 **target: Any) -> Dict[str, Any]:
        return self._op("checkout", path, target, ref=ref, create=create, start_point=start_point, force=force)

    def reset(self, path: str = "", ref: str = "", mode: str = "", paths: Optional[List[str]] = None,
              **target: Any) -> Dict[str, Any]:
        return self._op("reset", path, target, ref=ref, mode=mode, paths=paths)

    def restore(self, path: str, paths: List[str], staged: bool = False, worktree: bool = False, source: str = "",
                **target: Any) -> Dict[str, Any]:
        return self._op("restore", path, target, paths=paths, staged=staged, worktree=worktree, source=source)

    def remote(self, path: str = "", name: str = "", url: str = "", remove: bool = False, overwrite: bool = False,
               **target: Any) -> Dict[str, Any]:
        """The remotes; with name and url, first adds one (remove: removes it)."""
        return self._op("remote", path, target, name=name, url=url, remove=remove, overwrite=overwrite)

    def config(self, path: str = "", key: str = "", value: Optional[str] = None, unset: bool = False,
               scope: str = "", **target: Any) -> Dict[str, Any]:
        """Set key to value, get key's values (no value), unset it, or list
        every entry (no key) of the scope ("local" by default, or "global");
        {"entries": [{key, value}]}."""
        return self._op("config", path, target, None if value is None else {"value": value},
                        key=key, unset=unset, scope=scope)

    def fetch(self, path: str = "", remote: str = "", branch: str = "", prune: bool = False, username: str = "",
              password: str = "", token: str = "", credentials_for: str = "", **target: Any) -> Dict[str, Any]:
        return self._op("fetch", path, target, remote=remote, branch=branch, prune=prune,
                        username=username, password=password, token=token, credentials_for=credentials_for)

    def push(self, path: str = "", remote: str = "", branch: str = "", set_upstream: bool = False,
             force: bool = False, username: str = "", password: str = "", token: str = "",
             credentials_for: str = "", **target: Any) -> Dict[str, Any]:
        """{"remote", "refs": [{local, remote, status, summary}]}."""
        return self._op("push", path, target, remote=remote, branch=branch, set_upstream=set_upstream, force=force,
                        username=username, password=password, token=token, credentials_for=credentials_for)

    def pull(self, path: str = "", remote: str = "", branch: str = "", rebase: bool = False, ff_only: bool = False,
             author_name: str = "", author_email: str = "", username: str = "", password: str = "",
             token: str = "", credentials_for: str = "", **target: Any) -> Dict[str, Any]:
        return self._op("pull", path, target, remote=remote, branch=branch, rebase=rebase, ff_only=ff_only,
                        author_name=author_name, author_email=author_email,
                        username=username, password=password, token=token, credentials_for=credentials_for)


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _sandbox_id(sandbox: Any) -> str:
    return sandbox.id if isinstance(sandbox, Sandbox) else str(sandbox)


def _query(params: Dict[str, Any]) -> str:
    kept = {k: ("true" if v is True else v) for k, v in params.items() if v is not None and v is not False and v != ""}
    return "?" + urllib.parse.urlencode(kept) if kept else ""


def _exec_body(argv, env, workdir, timeout_ms, stdin) -> Dict[str, Any]:
    if not argv:
        raise ValueError("exec needs a command")
    body: Dict[str, Any] = {"argv": list(argv)}
    if env:
        body["env"] = env
    if workdir:
        body["workdir"] = workdir
    if timeout_ms:
        body["timeout_ms"] = timeout_ms
    if stdin is not None:
        body["stdin"] = base64.b64encode(stdin).decode()
    return body


def _exec_result(res: Dict[str, Any], stdout: str, stderr: str) -> ExecResult:
    return ExecResult(stdout=stdout, stderr=stderr, exit_code=res.get("exit_code"),
                      timed_out=bool(res.get("timed_out")), duration_ms=int(res.get("duration_ms") or 0),
                      timeout_ms=int(res.get("timeout_ms") or 0))
