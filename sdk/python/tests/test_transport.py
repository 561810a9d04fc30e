"""The SDK's transports without a daemon: https with a private CA (given,
or $HUTCH_CA_CERT) and the local Unix socket, each against a small server
of this test that answers GET /v1/sandboxes."""

import http.server
import json
import os
import socketserver
import ssl
import subprocess
import sys
import tempfile
import threading
import unittest
import urllib.error
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from hutch import Hutch  # noqa: E402


class _Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"sandboxes": [{"sandbox_id": "via-" + self.server.name}]}).encode()
        self.send_response(200 if self.path == "/v1/sandboxes" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def get_request(self):
        conn, _ = super().get_request()
        return conn, ("local", 0)  # BaseHTTPRequestHandler wants a (host, port)


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


class TransportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="hutch-sdk-py-")
        d = cls.dir
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
                 "-days", "1", "-subj", "/CN=hutch test CA", cwd=d)
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
                 "-subj", "/CN=127.0.0.1", cwd=d)
        with open(os.path.join(d, "san.ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\n")
        _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", "server.crt", "-days", "1", "-extfile", "san.ext", cwd=d)
        cls.ca = os.path.join(d, "ca.crt")

        cls.https = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
        cls.https.name = "tls"
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(d, "server.crt"), os.path.join(d, "server.key"))
        cls.https.socket = ctx.wrap_socket(cls.https.socket, server_side=True)
        cls.https_url = "https://127.0.0.1:%d" % cls.https.server_address[1]

        cls.sock = os.path.join(d, "hutch.sock")
        cls.unix = _UnixServer(cls.sock, _Answer)
        cls.unix.name = "socket"
        for srv in (cls.https, cls.unix):
            threading.Thread(target=srv.serve_forever, daemon=True).start()

    @classmethod
    def tearDownClass(cls):
        for srv in (cls.https, cls.unix):
            srv.shutdown()
            srv.server_close()
        subprocess.run(["rm", "-rf", cls.dir], check=True)

    def ids(self, h):
        return [s["sandbox_id"] for s in h.list()]

    def test_https_with_a_given_ca(self):
        with mock.patch.dict(os.environ, {"HUTCH_CA_CERT": ""}):
            self.assertEqual(self.ids(Hutch(self.https_url, ca_cert=self.ca)), ["via-tls"])
            # The system's CAs do not know the private one.
            with self.assertRaises(urllib.error.URLError) as e:
                Hutch(self.https_url).list()
            self.assertIsInstance(e.exception.reason, ssl.SSLCertVerificationError)

    def test_https_with_hutch_ca_cert(self):
        with mock.patch.dict(os.environ, {"HUTCH_CA_CERT": self.ca}):
            self.assertEqual(self.ids(Hutch(self.https_url)), ["via-tls"])

    def test_unix_socket(self):
        self.assertEqual(self.ids(Hutch("unix://" + self.sock)), ["via-socket"])
        # Without a URL, the socket $HUTCH_SOCKET names when it exists.
        env = {k: v for k, v in os.environ.items() if k != "HUTCH_URL"}
        env["HUTCH_SOCKET"] = self.sock
        with mock.patch.dict(os.environ, env, clear=True):
            self.assertEqual(self.ids(Hutch()), ["via-socket"])
            env["HUTCH_SOCKET"] = os.path.join(self.dir, "absent.sock")
            with mock.patch.dict(os.environ, env, clear=True):
                self.assertEqual(Hutch().url, "http://127.0.0.1:3111")


if __name__ == "__main__":
    unittest.main()
