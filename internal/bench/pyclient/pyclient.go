// Package pyclient holds the python programs the benchmarks run as
// clients, in a sandbox or on the host: a leaf, so that a package's own
// benchmark can use the same client as hutch bench without importing it.
package pyclient

// HTTPS makes argv[4] HTTPS requests to argv[1]:argv[2] with SNI and
// Host argv[3], each on a new connection verified against the default
// roots and the CAs argv[5] (in PEM), after argv[6] untimed ones, and
// prints the timed ones' durations in nanoseconds. An answer whose body
// is not "ok" ends it with an error. Like the clients sandboxes run
// (python's http.client and so urllib and requests, curl, node), it
// sets TCP_NODELAY: without it the request waits, behind Nagle's
// algorithm, for the server's delayed ACK of the client's Finished, a
// 40 to 46 ms timer that was most of each request's time and whose
// jitter hid the differences measured.
const HTTPS = `
import socket, ssl, sys, time
addr, port, name, n, ca, warm = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], int(sys.argv[6])
ctx = ssl.create_default_context()
ctx.load_verify_locations(cadata=ca)
req = ("GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % name).encode()
out = []
for i in range(warm + n):
    t = time.perf_counter()
    with socket.create_connection((addr, port), timeout=10) as raw:
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with ctx.wrap_socket(raw, server_hostname=name) as s:
            s.sendall(req)
            body = b""
            while True:
                b = s.recv(65536)
                if not b:
                    break
                body += b
    d = time.perf_counter() - t
    if not body.endswith(b"\r\n\r\nok"):
        sys.exit("unexpected answer: %r" % body[:300])
    if i >= warm:
        out.append(d)
print(" ".join("%d" % (d * 1e9) for d in out))
`
