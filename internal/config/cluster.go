package config

import (
	"fmt"
	"net"
	"regexp"
	"strings"
)

// Cluster is the block of the cluster node (issue 35, internal/kubenode):
// what `hutch serve --kubeconfig` registers and how it serves the kubelet
// API. Without --kubeconfig the block is read but unused.
type Cluster struct {
	// NodeName is the Node's name; empty is hutch-<hostname>.
	NodeName string `yaml:"node_name"`
	// Labels are added to the Node's (the runtimes' labels are hutch's).
	Labels map[string]string `yaml:"labels"`
	// Taints replace the default hutch.dev/sandbox=true:NoSchedule, each
	// key=value:Effect or key:Effect; an empty list is the default.
	Taints []string `yaml:"taints"`
	// KubeletListen is the kubelet API's address (exec, logs,
	// port-forward for the apiserver).
	KubeletListen string `yaml:"kubelet_listen"`
	// NodeIP is the address the Node advertises (InternalIP), where the
	// apiserver reaches the kubelet API; empty is the host's first
	// non-loopback IPv4 address.
	NodeIP string `yaml:"node_ip"`
	// TLSCertFile and TLSKeyFile are the kubelet API's serving
	// certificate, signed by a CA the apiserver trusts
	// (--kubelet-certificate-authority).
	TLSCertFile string `yaml:"tls_cert_file"`
	TLSKeyFile  string `yaml:"tls_key_file"`
	// ClientCAFile verifies the apiserver's client certificate
	// (--kubelet-client-certificate); a request without a verified
	// certificate or a bearer token the apiserver accepts is refused.
	ClientCAFile string `yaml:"client_ca_file"`
	// LostGraceSecs is how long a Node may be NotReady before the
	// cluster side force-deletes its Pods and records sandbox.lost.
	LostGraceSecs uint64 `yaml:"lost_grace_secs"`
	// ReattachGraceSecs, when not 0, keeps the node's Pod sandboxes
	// (gVisor, no volumes; with their networks) running for that long
	// after the daemon died or stopped, for the restarted daemon to
	// adopt; 0 (the default) ends them with the daemon, as every other
	// sandbox.
	ReattachGraceSecs uint64 `yaml:"reattach_grace_secs"`

	// issue 36: the cluster API (internal/clusterapi, docs/cluster.md).
	// API turns it on: a create on this node becomes a Pod in the
	// owner's namespace, placed by the scheduler, and a call for a
	// sandbox another node holds is forwarded to that node. Off, the node
	// creates its API's sandboxes itself, as a single box does.
	API bool `yaml:"api"`
	// PeerToken is the cluster's credential of the node-to-node channel:
	// the same on every node, at least 16 bytes; a forwarded call
	// without it is refused.
	PeerToken string `yaml:"peer_token"`
	// NamespacePrefix names the owners' namespaces: prefix + the owner.
	NamespacePrefix string `yaml:"namespace_prefix"`
	// APIURL is where the other nodes reach this node's API (the Node's
	// hutch.dev/api-url annotation); empty is http(s)://node_ip:<port of
	// --listen>.
	APIURL string `yaml:"api_url"`
	// CreateTimeoutSecs bounds a create's wait for its Pod to be placed
	// and Ready.
	CreateTimeoutSecs uint64 `yaml:"create_timeout_secs"`
}

// DefaultTaint keeps Pods that do not tolerate it off a hutch node.
const DefaultTaint = "hutch.dev/sandbox=true:NoSchedule"

// defaultCluster is the cluster block's default.
func defaultCluster() Cluster {
	return Cluster{KubeletListen: ":10250", LostGraceSecs: 60,
		NamespacePrefix: "hutch-", CreateTimeoutSecs: 300} // issue 36
}

// ParseTaint splits key=value:Effect (or key:Effect) into its parts; the
// effect must be NoSchedule, PreferNoSchedule or NoExecute.
func ParseTaint(s string) (key, value, effect string, err error) {
	kv, effect, ok := strings.Cut(s, ":")
	if !ok || kv == "" {
		return "", "", "", fmt.Errorf("taint %q is not key=value:Effect", s)
	}
	switch effect {
	case "NoSchedule", "PreferNoSchedule", "NoExecute":
	default:
		return "", "", "", fmt.Errorf("taint %q: the effect must be NoSchedule, PreferNoSchedule or NoExecute", s)
	}
	key, value, _ = strings.Cut(kv, "=")
	return key, value, effect, nil
}

// validateCluster checks the cluster block.
func (c *Config) validateCluster() []error {
	var errs []error
	for _, t := range c.Cluster.Taints {
		if _, _, _, err := ParseTaint(t); err != nil {
			errs = append(errs, fmt.Errorf("cluster.taints: %w", err))
		}
	}
	if _, _, err := net.SplitHostPort(c.Cluster.KubeletListen); err != nil {
		errs = append(errs, fmt.Errorf("cluster.kubelet_listen %q: %w", c.Cluster.KubeletListen, err))
	}
	if c.Cluster.NodeIP != "" && net.ParseIP(c.Cluster.NodeIP) == nil {
		errs = append(errs, fmt.Errorf("cluster.node_ip %q is not an IP address", c.Cluster.NodeIP))
	}
	if (c.Cluster.TLSCertFile == "") != (c.Cluster.TLSKeyFile == "") {
		errs = append(errs, fmt.Errorf("cluster.tls_cert_file and cluster.tls_key_file go together"))
	}
	if c.Cluster.LostGraceSecs == 0 {
		errs = append(errs, fmt.Errorf("cluster.lost_grace_secs must be at least 1"))
	}
	errs = append(errs, c.validateClusterAPI()...) // issue 36
	return errs
}

// issue 36: validateClusterAPI checks the cluster API's keys.
func (c *Config) validateClusterAPI() []error {
	cc := c.Cluster
	var errs []error
	if cc.API && len(cc.PeerToken) < 16 {
		errs = append(errs, fmt.Errorf("cluster.peer_token must be at least 16 bytes with cluster.api (the same on every node, e.g. `openssl rand -hex 24`)"))
	}
	if !clusterPrefix.MatchString(cc.NamespacePrefix) {
		errs = append(errs, fmt.Errorf("cluster.namespace_prefix %q must be 1 to 20 lowercase letters, digits or -, starting with a letter", cc.NamespacePrefix))
	}
	if cc.APIURL != "" && !strings.HasPrefix(cc.APIURL, "http://") && !strings.HasPrefix(cc.APIURL, "https://") {
		errs = append(errs, fmt.Errorf("cluster.api_url %q must be an http:// or https:// URL", cc.APIURL))
	}
	if cc.CreateTimeoutSecs == 0 {
		errs = append(errs, fmt.Errorf("cluster.create_timeout_secs must be at least 1"))
	}
	return errs
}

// clusterPrefix matches cluster.namespace_prefix: the start of a DNS label.
var clusterPrefix = regexp.MustCompile(`^[a-z][a-z0-9-]{0,19}$`)
