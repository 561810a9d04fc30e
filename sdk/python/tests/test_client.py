"""The Python SDK against a real daemon ($HUTCH_URL)."""

import base64
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from hutch import DownloadTooLarge, Hutch, HutchError  # noqa: E402

# A web server for the sandbox's loopback that logs each request's
# Authorization header to /tmp/auth.log and answers 404.
AUTH_LOGGER = r'''
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open("/tmp/auth.log", "a") as f:
            f.write(self.headers.get("Authorization", "-") + "\n")
        self.send_response(404)
        self.end_headers()
http.server.HTTPServer(("127.0.0.1", 8765), H).serve_forever()
'''


def until(check, what, tries=300, pause=0.1):
    """check()'s first true value; a failure after tries (generous: no
    test asserts a duration)."""
    for _ in range(tries):
        got = check()
        if got:
            return got
        time.sleep(pause)
    raise AssertionError("gave up waiting for " + what)


class SandboxTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hutch = Hutch()
        cls.sb = cls.hutch.create("python")

    @classmethod
    def tearDownClass(cls):
        cls.sb.stop()

    def test_exec(self):
        res = self.sb.exec("sh", "-c", "echo out; echo err >&2; exit 3")
        self.assertEqual((res.stdout, res.stderr, res.exit_code, res.ok), ("out\n", "err\n", 3, False))
        res = self.sb.exec("cat", stdin=b"piped")
        self.assertEqual(res.stdout, "piped")
        res = self.sb.exec("sleep", "100", timeout_ms=300)
        self.assertEqual((res.timed_out, res.exit_code, res.timeout_ms), (True, None, 300))
        # Over the daemon's max_exec_timeout_ms (at most a day) is refused.
        with self.assertRaises(HutchError) as e:
            self.sb.exec("true", timeout_ms=24 * 3600 * 1000 + 1)
        self.assertEqual(e.exception.code, "S001")
        self.assertIn("max_exec_timeout_ms", e.exception.message)

    def test_exec_stream(self):
        stream = self.sb.exec_stream("sh", "-c", "echo one; echo two >&2")
        events = [(e.type, e.data.get("data")) for e in stream if e.type in ("stdout", "stderr")]
        self.assertIn(("stdout", "one\n"), events)
        self.assertIn(("stderr", "two\n"), events)
        self.assertEqual(stream.result["exit_code"], 0)

    def test_files(self):
        self.sb.files.write("/tmp/sdk/a.txt", "hello")
        self.assertEqual(self.sb.files.read_text("/tmp/sdk/a.txt"), "hello")
        self.sb.files.write("/tmp/sdk/b.bin", b"\x00\xff")
        self.assertEqual(self.sb.files.read("/tmp/sdk/b.bin"), b"\x00\xff")
        names = sorted(e["name"] for e in self.sb.files.list("/tmp/sdk"))
        self.assertEqual(names, ["a.txt", "b.bin"])
        big = os.urandom(3 << 20)
        self.sb.files.upload("/tmp/sdk/big", big)
        self.assertEqual(b"".join(self.sb.files.download("/tmp/sdk/big")), big)
        # Downloads are bounded: past max_bytes nothing more comes.
        with self.assertRaises(DownloadTooLarge) as e:
            b"".join(self.sb.files.download("/tmp/sdk/big", max_bytes=1 << 20))
        self.assertEqual(e.exception.limit, 1 << 20)
        self.assertIn("max_bytes", str(e.exception))
        self.assertEqual(b"".join(self.sb.files.download("/tmp/sdk/big", max_bytes=3 << 20)), big)
        with self.assertRaises(HutchError) as e:
            self.sb.files.read("/tmp/sdk/missing")
        self.assertEqual(e.exception.code, "S211")

    def test_processes(self):
        pid = self.sb.processes.start("sh", "-c", "echo started; read line; echo got $line", tag="sdk", stdin=True)
        self.sb.processes.write_stdin(pid, "x\n", close=True)
        out = "".join(e.data["data"] for e in self.sb.processes.follow(pid) if e.type == "stdout")
        self.assertEqual(out, "started\ngot x\n")
        self.assertEqual(self.sb.processes.get(pid)["exit_code"], 0)

    def test_code(self):
        self.sb.code.run("x = 41")
        printed = []
        res = self.sb.code.run("print('hi')\nx + 1", on_output=printed.append)
        self.assertEqual(res["data"]["text/plain"], "42")
        self.assertEqual("".join(e.data["data"] for e in printed), "hi\n")
        res = self.sb.code.run("1/0")
        self.assertEqual(res["error"]["name"], "ZeroDivisionError")

    def test_ports(self):
        pid = self.sb.processes.start("python3", "-m", "http.server", "8000", "--bind", "127.0.0.1", "--directory", "/etc")
        url = self.sb.ports.expose(8000)
        import time, urllib.request
        for _ in range(100):
            try:
                with urllib.request.urlopen(url + "hostname") as resp:
                    self.assertEqual(resp.status, 200)
                    break
            except OSError:
                time.sleep(0.1)
        else:
            self.fail("the preview URL did not answer")
        self.assertEqual([p["port"] for p in self.sb.ports.list()], [8000])
        self.sb.ports.unexpose(8000)
        self.sb.processes.kill(pid)

    def test_terminal(self):
        with self.sb.pty(cmd=["sh"]) as term:
            term.resize(100, 30)
            term.write("stty size; echo done$((1+1)); exit 3\n")
            shown = b""
            while True:
                data = term.read()
                if data is None:
                    break
                shown += data
        self.assertIn(b"30 100", shown)
        self.assertIn(b"done2", shown)
        self.assertEqual(term.exit_code, 3)

    def test_files_as_another_user(self):
        self.sb.files.write("/tmp/as-user/mine.txt", "x", user="nobody")
        self.assertEqual(self.sb.exec("stat", "-c", "%U", "/tmp/as-user/mine.txt").stdout, "nobody\n")
        self.sb.files.upload("/tmp/as-user/up.bin", b"\x01", user="nobody")
        self.assertEqual(self.sb.exec("stat", "-c", "%U", "/tmp/as-user/up.bin").stdout, "nobody\n")
        self.sb.files.write("/tmp/as-user/secret", "root only", mode="0600")
        self.assertEqual(self.sb.files.read_text("/tmp/as-user/secret"), "root only")
        for call in (lambda: self.sb.files.read("/tmp/as-user/secret", user="nobody"),
                     lambda: b"".join(self.sb.files.download("/tmp/as-user/secret", user="nobody"))):
            with self.assertRaises(HutchError) as e:
                call()
            self.assertEqual(e.exception.code, "S215")
        names = [e["name"] for e in self.sb.files.list("/tmp/as-user", user="nobody")]
        self.assertEqual(sorted(names), ["mine.txt", "secret", "up.bin"])
        with self.assertRaises(HutchError) as e:
            self.sb.files.watch("/tmp/as-user", user="no-such-user")
        self.assertEqual(e.exception.code, "S001")

    def test_watch(self):
        self.sb.files.mkdir("/tmp/watched/sub")
        target = "/tmp/watched/sub/new.txt"
        seen = threading.Event()

        def touch():
            # Until the change is seen: the test does not count on one
            # write arriving after the watch is in place.
            while not seen.is_set():
                self.sb.exec("touch", target)
                seen.wait(0.5)

        toucher = threading.Thread(target=touch)
        with self.sb.files.watch("/tmp/watched", recursive=True, timeout=120) as watch:
            events = iter(watch)
            self.assertEqual(next(events).type, "open")
            toucher.start()
            try:
                for e in events:
                    if e.type == "change" and e.data["path"] == target:
                        self.assertIn(e.data["type"], ("create", "chmod", "write"))
                        break
            finally:
                seen.set()
                toucher.join()
        # Leaving the loop and the block ended the call; the sandbox is
        # fine and watches again.
        self.assertIsNone(watch.result)
        with self.assertRaises(HutchError) as e:
            self.sb.files.watch("/tmp/watched/missing")
        self.assertEqual(e.exception.code, "S211")
        first = next(iter(self.sb.files.watch("/tmp/watched")))
        self.assertEqual(first.type, "open")

    def test_env(self):
        after = self.sb.env.set({"SDK_A": "1"}, SDK_B="two words")
        self.assertEqual((after["env"]["SDK_A"], after["env"]["SDK_B"]), ("1", "two words"))
        self.assertIn("PATH", after["effective"])
        self.assertEqual(self.sb.env.get("SDK_B"), "two words")
        self.assertEqual(self.sb.exec("sh", "-c", 'echo "$SDK_A $SDK_B"').stdout, "1 two words\n")
        self.assertEqual(self.sb.env.list()["env"].get("SDK_A"), "1")
        after = self.sb.env.delete("SDK_A", "SDK_B")
        self.assertNotIn("SDK_A", after["env"])
        self.assertIsNone(self.sb.env.get("SDK_A"))
        self.assertEqual(self.sb.exec("sh", "-c", 'echo "${SDK_A-unset}"').stdout, "unset\n")

    def test_git(self):
        repo = "/tmp/sdk-repo"
        self.assertEqual(self.sb.git.init(repo, initial_branch="main")["path"], repo)
        self.sb.files.write(repo + "/a.txt", "one\n")
        st = self.sb.git.status(repo)
        self.assertFalse(st["clean"])
        self.assertEqual([(f["path"], f["status"]) for f in st["files"]], [("a.txt", "untracked")])
        st = self.sb.git.add(repo)
        self.assertEqual([(f["path"], f["staged"]) for f in st["files"]], [("a.txt", True)])
        commit = self.sb.git.commit(repo, "first", author_name="SDK", author_email="sdk@example.test")["commit"]
        self.assertEqual((commit["subject"], commit["author"]), ("first", "SDK"))
        st = self.sb.git.status(repo)
        self.assertTrue(st["clean"])
        self.assertEqual((st["branch"], st["commit"]), ("main", commit["hash"]))
        self.sb.files.write(repo + "/a.txt", "one\ntwo\n")
        diff = self.sb.git.diff(repo, name_status=True)
        self.assertIn("+two", diff["diff"])
        self.assertEqual(diff["files"], [{"status": "M", "path": "a.txt"}])
        self.sb.git.config(repo, key="user.name", value="Config Name")
        self.sb.git.config(repo, key="user.email", value="config@example.test")
        self.sb.git.commit(repo, "second", all=True)
        log = self.sb.git.log(repo)["commits"]
        self.assertEqual([(c["subject"], c["author"]) for c in log], [("second", "Config Name"), ("first", "SDK")])
        self.assertEqual(self.sb.git.branch(repo)["current"], "main")
        with self.assertRaises(HutchError) as e:
            self.sb.git.commit(repo, "nothing")
        self.assertEqual(e.exception.code, "S274")
        with self.assertRaises(HutchError) as e:
            self.sb.git.status("/tmp")
        self.assertEqual(e.exception.code, "S270")

    def test_git_credentials_for_one_call(self):
        # A clone from a server on the sandbox's loopback that logs what
        # it is sent: the token goes as basic auth, in that call only.
        pid = self.sb.processes.start("python3", "-c", AUTH_LOGGER)
        try:
            def logged():
                try:
                    self.sb.git.clone("http://127.0.0.1:8765/r.git", "/tmp/cloned", username="sdk", token="t0ken")
                except HutchError as e:
                    # 404 (S272), or S275 until the server listens.
                    self.assertIn(e.code, ("S272", "S275"))
                return self.sb.exec("cat", "/tmp/auth.log").stdout
            self.assertIn("Basic " + base64.b64encode(b"sdk:t0ken").decode(), until(logged, "the clone's request"))
        finally:
            self.sb.processes.kill(pid)
        self.assertNotIn("t0ken", self.sb.exec("sh", "-c", "env; cat ~/.gitconfig 2>/dev/null").stdout)
        # Credentials for another host are refused before git runs; a
        # remote given by name needs credentials_for.
        with self.assertRaises(HutchError) as e:
            self.sb.git.clone("http://127.0.0.1:8765/r.git", "/tmp/other", token="t0ken", credentials_for="github.com")
        self.assertEqual(e.exception.code, "S271")
        self.sb.git.init("/tmp/named")
        with self.assertRaises(HutchError) as e:
            self.sb.git.fetch("/tmp/named", token="t0ken")
        self.assertEqual(e.exception.code, "S001")

    def test_errors_carry_the_s_code(self):
        with self.assertRaises(HutchError) as e:
            self.hutch.connect("00000000-0000-0000-0000-000000000000")
        self.assertEqual(e.exception.code, "S002")
        self.assertEqual(e.exception.status, 404)


class LifecycleTest(unittest.TestCase):
    def test_context_manager_stops_the_sandbox(self):
        hutch = Hutch()
        with hutch.create("python") as sb:
            self.assertEqual(sb.exec("true").exit_code, 0)
            snap = sb.snapshot()
            self.assertTrue(snap["snapshot_id"])
        self.assertTrue(hutch.connect(sb.id).info()["stopped"])
        hutch.request("DELETE", "/v1/snapshots/" + snap["snapshot_id"])


def resolves(sb, name):
    """Whether name resolves inside sandbox sb."""
    return sb.exec("python3", "-c", f"import socket; socket.gethostbyname({name!r})").ok


def denied_names(hutch, sb):
    return {e["data"].get("name") for e in hutch.events(sandbox_id=sb.id, type="egress.denied")}


class NetworkTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hutch = Hutch()

    def test_secrets(self):
        value = "sk-" + os.urandom(8).hex()
        info = self.hutch.secrets.set("SDK_PY_KEY", value)
        self.assertEqual(info["placeholder"], "hutch-secret-placeholder-SDK_PY_KEY")
        listed = self.hutch.secrets.list()
        self.assertIn("SDK_PY_KEY", [s["name"] for s in listed])
        self.assertNotIn(value, repr(listed))
        self.hutch.secrets.delete("SDK_PY_KEY")
        with self.assertRaises(HutchError) as e:
            self.hutch.secrets.delete("SDK_PY_KEY")
        self.assertEqual(e.exception.code, "S280")

    def test_egress_policy(self):
        with self.hutch.create("python", network={"deny_out": ["denied.example.test"]}) as sb:
            self.assertEqual(sb.info()["egress"], {"deny_out": ["denied.example.test"]})
            self.assertFalse(resolves(sb, "denied.example.test"))
            # hutch's resolver refused it (not merely an unknown name).
            until(lambda: "denied.example.test" in denied_names(self.hutch, sb), "an egress.denied event")
            res = sb.network.update(deny_out=["also-denied.example.test"])
            self.assertEqual(res["deny_out"], ["also-denied.example.test"])
            self.assertFalse(resolves(sb, "also-denied.example.test"))
            until(lambda: "also-denied.example.test" in denied_names(self.hutch, sb), "an egress.denied event")
            res = sb.network.update({"allow_out": ["pypi.org"]})
            self.assertEqual((res.get("allow_out"), res.get("deny_out")), (["pypi.org"], None))
            self.assertNotIn("allow_out", sb.network.update())
        with self.hutch.create("python") as sb:
            with self.assertRaises(HutchError) as e:
                sb.network.update(deny_out=["example.test"])
            self.assertEqual(e.exception.code, "S252")

    def test_networks(self):
        name = "sdk-python-net"
        try:
            self.hutch.networks.delete(name)
        except HutchError as e:
            self.assertEqual(e.code, "S250")
        net = self.hutch.networks.create(name)
        self.assertEqual((net["name"], net["members"]), (name, []))
        self.assertIn(name, [n["name"] for n in self.hutch.networks.list()])
        try:
            with self.hutch.create("python", network=True, name="sdk-python-web") as web, \
                    self.hutch.create("python", network=True) as client:
                self.hutch.networks.connect(name, web)
                net = self.hutch.networks.connect(name, client.id)
                self.assertEqual(sorted(m["sandbox_id"] for m in net["members"]), sorted([web.id, client.id]))
                self.assertTrue(resolves(client, "sdk-python-web"))
                self.assertTrue(resolves(client, web.id + "." + name))
                with self.assertRaises(HutchError) as e:
                    self.hutch.networks.delete(name)
                self.assertEqual(e.exception.code, "S251")
                net = self.hutch.networks.disconnect(name, client)
                self.assertEqual([m["sandbox_id"] for m in net["members"]], [web.id])
                self.assertFalse(resolves(client, "sdk-python-web"))
                self.hutch.networks.disconnect(name, web.id)
        finally:
            self.hutch.networks.delete(name)
        self.assertNotIn(name, [n["name"] for n in self.hutch.networks.list()])


class VolumeTest(unittest.TestCase):
    def test_a_volume_outlives_its_sandboxes(self):
        hutch = Hutch()
        name = "sdk-python-vol"
        try:
            hutch.volumes.delete(name)
        except HutchError as e:
            self.assertEqual(e.code, "S260")
        self.assertEqual(hutch.volumes.create(name, size_mb=16)["size_mb"], 16)
        try:
            self.assertIn(name, [v["name"] for v in hutch.volumes.list()])
            with hutch.create("python", volumes=[{"name": name, "path": "/data"}]) as writer:
                writer.files.write("/data/note.txt", "kept")
                self.assertEqual(hutch.volumes.get(name)["sandbox_ids"], [writer.id])
                with self.assertRaises(HutchError) as e:
                    hutch.volumes.delete(name)
                self.assertEqual(e.exception.code, "S262")
            with hutch.create("python", volumes=[{"name": name, "path": "/mnt/v", "read_only": True}]) as reader:
                self.assertEqual(reader.files.read_text("/mnt/v/note.txt"), "kept")
                self.assertFalse(reader.exec("touch", "/mnt/v/other").ok)
            self.assertGreater(hutch.volumes.get(name)["used_bytes"], 0)
        finally:
            self.assertTrue(hutch.volumes.delete(name)["deleted"])
        with self.assertRaises(HutchError) as e:
            hutch.volumes.get(name)
        self.assertEqual(e.exception.code, "S260")


if __name__ == "__main__":
    unittest.main()
