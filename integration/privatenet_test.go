package integration

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/vethns"
)

// privateTarget serves body on a private address in a network namespace
// the test makes, joined to the host by a veth: an address the host
// reaches only by routing, as it would a machine on its LAN. It never
// leaves this host. It returns the URL.
func privateTarget(t *testing.T, body string) string {
	return privateTargetN(t, 0, body)
}

// privateTargetN is privateTarget number n (0 to 63) of one test.
func privateTargetN(t *testing.T, n int, body string) string {
	t.Helper()
	target, inside := privateNetns(t, n)
	var ln net.Listener
	if err := inside(func() (err error) { ln, err = net.Listen("tcp", target+":0"); return err }); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, body) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/"
}

// privateNetns makes network namespace number n (0 to 63) of one test,
// joined to the host by a veth, and returns its private address and a
// function that runs f inside it (a socket f opens stays there).
func privateNetns(t *testing.T, n int) (target string, inside func(f func() error) error) {
	t.Helper()
	subnet := fmt.Sprintf("172.31.%d", os.Getpid()%250)
	ns, err := vethns.Make(fmt.Sprintf("hpriv%d-%d", os.Getpid()%100000, n), fmt.Sprintf("%s.%d", subnet, 4*n+1), fmt.Sprintf("%s.%d", subnet, 4*n+2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Close)
	return ns.Addr, ns.Inside
}

func TestNetworkBlocksPrivateRanges(t *testing.T) {
	for _, tc := range []struct {
		name, config, want string
	}{
		{"by default", "", "ERR"},
		{"unless turned off", "block_private_networks: false\n", "private"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := privateTarget(t, "private")
			d := startDaemon(t, baseConfig(tc.config))
			id := d.create(api.CreateRequest{Image: "python", Network: true})
			if got := d.fetch(id, target); !strings.HasPrefix(got[0], tc.want) {
				t.Errorf("fetching %s from a network sandbox: %q, want %q", target, got, tc.want)
			}
			// This host's nameserver is a private address: DNS to it
			// still passes, when the host itself can resolve.
			const name = "deb.debian.org"
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := net.DefaultResolver.LookupHost(ctx, name); err != nil {
				t.Logf("the host cannot resolve %s (%v): DNS from the sandbox not checked", name, err)
				return
			}
			if r := d.exec(id, "python3", "-c", `import socket; print(socket.gethostbyname("`+name+`"))`); !r.Success {
				t.Errorf("DNS from a network sandbox: %+v", r)
			}
		})
	}
}
