// Package kubenode makes a hutch daemon a node of a Kubernetes cluster
// (issue 35), in the virtual-kubelet pattern: there is no kubelet; hutch
// registers a Node, renews its Lease, runs the Pods the scheduler binds to
// it as sandboxes (pods.go), serves the kubelet API the apiserver calls
// for exec and logs (streams.go), and, on every node with one elected by
// a Lease, force-deletes the Pods of nodes gone longer than a grace
// (lost.go). The node and Pod controllers are virtual-kubelet's.
//
// Sandboxes are made and driven through the daemon's function table, the
// one entry point every transport uses.
package kubenode

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	goruntime "runtime"
	"strconv"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/events"
	"github.com/hutch-dev/hutch/internal/functions"
)

// Labels hutch sets on its Node.
const (
	// LabelNode marks a Node as a hutch node (the failure handling looks
	// only at these).
	LabelNode = "hutch.dev/node"
	// LabelRuntimePrefix + a runtime's name is "true" for each runtime
	// the node offers (gvisor, microvm): a RuntimeClass's scheduling
	// nodeSelector names it.
	LabelRuntimePrefix = "runtime.hutch.dev/"
)

// Options are what a node needs of its daemon.
type Options struct {
	// Kubeconfig is the node's credentials (`hutch serve --kubeconfig`).
	Kubeconfig string
	// Config is the daemon's configuration: the cluster block and the
	// limits the Node's capacity comes from.
	Config config.Config
	// Table is the daemon's function table, through which Pods become
	// sandboxes.
	Table *functions.Table
	// Runtimes are the runtimes the daemon offers, by name.
	Runtimes []string
	// OnStop registers a function told of every sandbox that stops.
	OnStop func(func(id string))
	// Dial connects to an exposed port of a sandbox (the preview path),
	// for port-forward; nil refuses port-forward.
	Dial func(ctx context.Context, sandboxID string, port int) (net.Conn, error)
	// Addr is a sandbox's network address (invalid without a network):
	// the Pod IP; nil reports none.
	Addr func(sandboxID string) netip.Addr
	// Events is the daemon's event log (sandbox.lost).
	Events *events.Log
	Logger *slog.Logger
	// issue 36: APIURL is where the other nodes reach this node's API
	// (the Node's hutch.dev/api-url annotation); "" for none.
	APIURL string
}

// Node is a running cluster node.
type Node struct {
	name   string
	client kubernetes.Interface
	vk     *nodeutil.Node
	prov   *provider
	done   chan struct{}
	err    error
}

// Start registers the node and starts its controllers, the kubelet API
// and the failure handling; they stop when ctx ends (Wait).
func Start(ctx context.Context, o Options) (*Node, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	cc := o.Config.Cluster
	restCfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", o.Kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", o.Kubeconfig, err)
	}
	name, err := nodeName(cc)
	if err != nil {
		return nil, err
	}
	ip, err := NodeIP(cc)
	if err != nil {
		return nil, err
	}
	_, portStr, _ := net.SplitHostPort(cc.KubeletListen)
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 {
		return nil, fmt.Errorf("cluster.kubelet_listen %q: a kubelet API needs a fixed port", cc.KubeletListen)
	}
	spec, err := nodeSpec(name, ip, int32(port), o)
	if err != nil {
		return nil, err
	}
	tlsOpt, err := servingTLS(cc)
	if err != nil {
		return nil, err
	}
	auth, err := kubeletAuth(client, name, cc.ClientCAFile)
	if err != nil {
		return nil, err
	}
	n := &Node{name: name, client: client, done: make(chan struct{})}
	mux := newMux()
	n.vk, err = nodeutil.NewNode(name, func(pc nodeutil.ProviderConfig) (nodeutil.Provider, node.NodeProvider, error) {
		n.prov = newProvider(o, name, ip, client, pc)
		dyn, err := dynamic.NewForConfig(restCfg) // issue 36: agent-sandbox
		n.prov.dyn = dyn
		return n.prov, nil, err
	},
		nodeutil.WithClient(client),
		func(c *nodeutil.NodeConfig) error {
			c.NodeSpec = spec
			c.HTTPListenAddr = cc.KubeletListen
			c.Handler = api.InstrumentHandler(nodeutil.WithAuth(auth, mux))
			c.NumWorkers = 4
			return nil
		},
		nodeutil.AttachProviderRoutes(mux),
		tlsOpt,
	)
	if err != nil {
		return nil, fmt.Errorf("making the cluster node: %w", err)
	}
	if o.OnStop != nil {
		o.OnStop(n.prov.sandboxStopped)
	}
	go func() {
		defer close(n.done)
		n.err = n.vk.Run(ctx)
	}()
	go runLostHandling(ctx, client, name, o)
	go n.prov.sweepHibernated(ctx) // issue 36: agent-sandbox
	if err := n.vk.WaitReady(ctx, 2*time.Minute); err != nil {
		return nil, fmt.Errorf("joining the cluster as node %s: %w", name, err)
	}
	if o.APIURL != "" { // issue 36: a Node registered before keeps its annotations
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnotationAPIURL: o.APIURL}}})
		if _, err := client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return nil, fmt.Errorf("annotating node %s with its API's URL: %w", name, err)
		}
	}
	o.Logger.Info("joined the cluster", "node", name, "node_ip", ip, "kubelet_listen", cc.KubeletListen)
	return n, nil
}

// Name is the Node's name.
func (n *Node) Name() string { return n.name }

// Client is the node's client of the apiserver (issue 36).
func (n *Node) Client() kubernetes.Interface { return n.client }

// Wait waits for the node's controllers to stop (after Start's context
// ends) and returns why they stopped, nil for the context's end.
func (n *Node) Wait() error {
	<-n.done
	if errors.Is(n.err, context.Canceled) {
		return nil
	}
	return n.err
}

// nodeName is cluster.node_name, else hutch-<hostname>.
func nodeName(cc config.Cluster) (string, error) {
	if cc.NodeName != "" {
		return cc.NodeName, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("naming the node (set cluster.node_name): %w", err)
	}
	return "hutch-" + host, nil
}

// NodeIP is cluster.node_ip, else the host's first non-loopback IPv4
// address.
func NodeIP(cc config.Cluster) (string, error) {
	if cc.NodeIP != "" {
		return cc.NodeIP, nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String(), nil
		}
	}
	return "", fmt.Errorf("the host has no IPv4 address to advertise: set cluster.node_ip")
}

// nodeSpec is the Node hutch registers: capacity from the daemon's
// limits, the runtimes as labels, the taints, the kubelet API's address.
func nodeSpec(name, ip string, port int32, o Options) (corev1.Node, error) {
	cfg, cc := o.Config, o.Config.Cluster
	labels := map[string]string{
		"type":                   "virtual-kubelet",
		"kubernetes.io/role":     "agent",
		"kubernetes.io/hostname": name,
		"kubernetes.io/os":       "linux",
		LabelNode:                "true",
	}
	for _, rt := range o.Runtimes {
		labels[LabelRuntimePrefix+rt] = "true"
	}
	for k, v := range cc.Labels {
		labels[k] = v
	}
	taintSpecs := cc.Taints
	if len(taintSpecs) == 0 {
		taintSpecs = []string{config.DefaultTaint}
	}
	var taints []corev1.Taint
	for _, s := range taintSpecs {
		k, v, e, err := config.ParseTaint(s)
		if err != nil {
			return corev1.Node{}, err
		}
		taints = append(taints, corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffect(e)})
	}
	capacity := Capacity(cfg)
	n := corev1.Node{}
	n.Name = name
	n.Labels = labels
	if o.APIURL != "" { // issue 36
		n.Annotations = map[string]string{AnnotationAPIURL: o.APIURL}
	}
	n.Spec.Taints = taints
	n.Status = corev1.NodeStatus{
		Phase:       corev1.NodePending,
		Capacity:    capacity,
		Allocatable: capacity,
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: ip},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: port}},
		NodeInfo: corev1.NodeSystemInfo{
			OperatingSystem: "linux", Architecture: goarch(),
			KubeletVersion: "hutch", ContainerRuntimeVersion: "hutch://sandbox",
		},
		Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "HutchHasDisk"},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "HutchHasMemory"},
			{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "HutchHasPIDs"},
			{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: "HutchNetworkReady"},
		},
	}
	return n, nil
}

// Capacity is what a node offers: pods = max_concurrent_sandboxes; cpu,
// memory and ephemeral storage = that many sandboxes of the default size
// (default_cpus, default_memory_mb, writable_layer_mb), the daemon's own
// overcommit.
func Capacity(cfg config.Config) corev1.ResourceList {
	pods := int64(cfg.MaxConcurrentSandboxes)
	return corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(pods*int64(cfg.DefaultCPUs), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(pods*int64(cfg.DefaultMemoryMB)<<20, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(pods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(pods*int64(cfg.WritableLayerMB)<<20, resource.BinarySI),
	}
}

// servingTLS is the kubelet API's TLS: the configured certificate, else
// none (the node then refuses to start: the API is never served in
// clear).
func servingTLS(cc config.Cluster) (nodeutil.NodeOpt, error) {
	if cc.TLSCertFile == "" {
		return nil, fmt.Errorf("cluster.tls_cert_file and cluster.tls_key_file are required: the kubelet API is served only over TLS the apiserver trusts")
	}
	if _, err := tls.LoadX509KeyPair(cc.TLSCertFile, cc.TLSKeyFile); err != nil {
		return nil, fmt.Errorf("cluster.tls_cert_file: %w", err)
	}
	return nodeutil.WithTLSConfig(nodeutil.WithKeyPairFromPath(cc.TLSCertFile, cc.TLSKeyFile)), nil
}

// kubeletAuth authenticates the kubelet API's callers as a kubelet does:
// a client certificate signed by cluster.client_ca_file, or a bearer token
// the apiserver accepts (TokenReview); then asks the apiserver whether
// the caller may act on this node (SubjectAccessReview of nodes/proxy,
// nodes/log, ...). Anonymous requests are refused.
func kubeletAuth(client kubernetes.Interface, name, clientCA string) (nodeutil.Auth, error) {
	var opts []nodeutil.WebhookAuthOption
	if clientCA != "" {
		ca, err := dynamiccertificates.NewDynamicCAContentFromFile("client-ca", clientCA)
		if err != nil {
			return nil, fmt.Errorf("cluster.client_ca_file: %w", err)
		}
		opts = append(opts, func(c *nodeutil.WebhookAuthConfig) error {
			c.AuthnConfig.ClientCertificateCAContentProvider = ca
			return nil
		})
	}
	auth, err := nodeutil.WebhookAuth(client, name, opts...)
	if err != nil {
		return nil, fmt.Errorf("the kubelet API's authentication: %w", err)
	}
	return auth, nil
}

// goarch is the Node's architecture.
func goarch() string { return goruntime.GOARCH }
