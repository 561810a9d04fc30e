package integration

// issue 35: the cluster test's network. The apiserver listens on a bridge
// of the host's network namespace; each hutch daemon runs in a network
// namespace of its own (hk-kube-N), joined to the bridge by a veth, with
// an address of its own. Everything is removed when the test ends, and
// checked gone.

import (
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/testutil"
)

const (
	// clusterBridge is the bridge of the test's network, in the host's
	// namespace; clusterHost its address, the apiserver's.
	clusterBridge = "hk-kbr"
	clusterSubnet = "10.235.35."
	clusterHost   = clusterSubnet + "1"
)

// clusterNode is a node's network namespace and its address there.
type clusterNode struct {
	netns string
	ip    net.IP
}

// ipCmd runs ip with args and fails t on an error.
func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// clusterNet names a cluster test's network, so that two such tests
// (run by hand at once) keep apart: its bridge, its subnet's first three
// octets (the host is .1, node i .10+i), and the prefixes of its network
// namespaces and of the host's ends of their veths.
type clusterNet struct{ bridge, subnet, netnsPrefix, vethPrefix string }

// testClusterNet is TestCluster's network.
var testClusterNet = clusterNet{bridge: clusterBridge, subnet: clusterSubnet, netnsPrefix: "hk-kube-", vethPrefix: "hk-kv"}

// clusterNetwork makes TestCluster's network (clusterNet.make).
func clusterNetwork(t *testing.T, n int) []clusterNode { return testClusterNet.make(t, n) }

// host is the host's address on c's bridge, the apiserver's.
func (c clusterNet) host() net.IP { return net.ParseIP(c.subnet + "1") }

// make makes the bridge and n namespaces, each with a veth to the bridge,
// an address and a default route through the host; it removes them all
// when t ends and fails t if any is left.
func (c clusterNet) make(t *testing.T, n int) []clusterNode {
	t.Helper()
	clusterBridge, clusterHost, hostVeth := c.bridge, c.host().String(), c.hostVeth
	nodes := make([]clusterNode, n)
	for i := range nodes {
		nodes[i] = clusterNode{netns: c.netnsPrefix + strconv.Itoa(i), ip: net.ParseIP(c.subnet + strconv.Itoa(10+i))}
	}
	t.Cleanup(func() {
		for i, nd := range nodes {
			// The namespace's end of the veth goes with it, and the
			// host's end with its peer (the kernel frees a namespace
			// in the background).
			_ = exec.Command("ip", "netns", "del", nd.netns).Run()
			if !testutil.Poll(30*time.Second, func() bool { return exec.Command("ip", "link", "show", hostVeth(i)).Run() != nil }) {
				t.Errorf("veth %s left after its namespace %s was removed", hostVeth(i), nd.netns)
			}
		}
		_ = exec.Command("ip", "link", "del", clusterBridge).Run()
		out, _ := exec.Command("ip", "-o", "link", "show").Output()
		names, _ := exec.Command("ip", "netns", "list").Output()
		if strings.Contains(string(out), clusterBridge) || strings.Contains(string(names), c.netnsPrefix) {
			t.Errorf("the cluster network left:\n%s%s", names, out)
		}
	})
	ipCmd(t, "link", "add", clusterBridge, "type", "bridge")
	ipCmd(t, "addr", "add", clusterHost+"/24", "dev", clusterBridge)
	ipCmd(t, "link", "set", clusterBridge, "up")
	for i, nd := range nodes {
		ipCmd(t, "netns", "add", nd.netns)
		ipCmd(t, "link", "add", hostVeth(i), "type", "veth", "peer", "name", "eth0", "netns", nd.netns)
		ipCmd(t, "link", "set", hostVeth(i), "master", clusterBridge, "up")
		ipCmd(t, "-n", nd.netns, "addr", "add", nd.ip.String()+"/24", "dev", "eth0")
		ipCmd(t, "-n", nd.netns, "link", "set", "eth0", "up")
		ipCmd(t, "-n", nd.netns, "link", "set", "lo", "up")
		ipCmd(t, "-n", nd.netns, "route", "add", "default", "via", clusterHost)
	}
	return nodes
}

// hostVeth is the host's end of node i's veth.
func (c clusterNet) hostVeth(i int) string { return c.vethPrefix + strconv.Itoa(i) }

// netnsLeftovers lists what a daemon left in its network namespace once
// it stopped: any nftables rule (the namespace had none before it) and
// any network device but lo and the test's eth0.
func netnsLeftovers(netns string) []string {
	var found []string
	if out, err := exec.Command("ip", "netns", "exec", netns, "nft", "list", "ruleset").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "" {
		found = append(found, "nftables in "+netns+": "+string(out))
	}
	out, err := exec.Command("ip", "-n", netns, "-o", "link", "show").CombinedOutput()
	if err != nil {
		return append(found, "ip link in "+netns+": "+err.Error())
	}
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) > 1 && f[1] != "lo:" && !strings.HasPrefix(f[1], "eth0@") {
			found = append(found, "network device in "+netns+": "+strings.TrimSpace(line))
		}
	}
	return found
}
