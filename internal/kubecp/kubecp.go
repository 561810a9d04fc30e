// Package kubecp runs a real Kubernetes control plane (issue 35: 5):
// etcd, kube-apiserver, kube-controller-manager and kube-scheduler, built
// by `make kube-deps` (part of `make deps`) at the versions pinned in
// deps/kube, started on one address with certificates generated for the
// run, and stopped by Stop. The cluster tests (through
// internal/testutil/kubetest) and `hutch bench --cluster` use it.
//
// Nothing here is a fake: the binaries are the release's, run as separate
// processes. There is no kubelet; the cluster's nodes are what the caller
// registers.
package kubecp

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeVersion and EtcdVersion are the versions pinned in deps/kube/go.mod
// and deps/kube/etcd/go.mod (kubetest's TestVersions checks they agree).
const (
	KubeVersion = "v1.37.2"
	EtcdVersion = "v3.6.16"
)

// BinDir is where `make kube-deps` puts the pinned control plane's
// binaries: KUBE_CACHE/kube-VERSION-etcd-VERSION/bin, where KUBE_CACHE is
// $HUTCH_KUBE_CACHE, else /var/cache/hutch for root, else
// $XDG_CACHE_HOME/hutch (~/.cache/hutch). The Makefile's KUBE_DIR is the
// same rule.
func BinDir() (string, error) {
	cache, err := cacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "kube-"+KubeVersion+"-etcd-"+EtcdVersion, "bin"), nil
}

// cacheDir is KUBE_CACHE (BinDir).
func cacheDir() (string, error) {
	cache := os.Getenv("HUTCH_KUBE_CACHE")
	if cache == "" && os.Geteuid() == 0 {
		cache = "/var/cache/hutch"
	}
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", err
			}
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "hutch")
	}
	return cache, nil
}

// Binaries are the programs a control plane runs, all in BinDir.
var Binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"}

// Built is nil when dir holds every one of Binaries.
func Built(dir string) error {
	for _, b := range Binaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return fmt.Errorf("control plane not built (run `make kube-deps`): %w", err)
		}
	}
	return nil
}

// startTimeout bounds the wait for each component to answer: etcd and the
// apiserver start in seconds, but a loaded two-core machine is slow.
const startTimeout = 2 * time.Minute

// ServiceCIDR is the cluster's service network; the apiserver's serving
// certificate names its first address (the kubernetes Service's).
const ServiceCIDR = "10.96.0.0/24"

// NodeMonitorGrace is the controller-manager's --node-monitor-grace-period:
// a node whose Lease is older is marked NotReady.
const NodeMonitorGrace = 20 * time.Second

// Options say where a control plane runs.
type Options struct {
	// BinDir holds the binaries (BinDir() when "").
	BinDir string
	// Dir is an empty directory of the run's files; the caller removes it.
	Dir string
	// Address is the apiserver's: it binds it, advertises it and names
	// it in its serving certificate (127.0.0.1 when nil). Nodes in other
	// network namespaces need one they reach. etcd, the
	// controller-manager's and the scheduler's own ports stay on loopback.
	Address net.IP
}

// ControlPlane is a running control plane, until Stop.
type ControlPlane struct {
	// BinDir holds the binaries it runs (kubectl among them).
	BinDir string
	// Dir holds its certificates, kubeconfigs, etcd's data and each
	// component's log (NAME.log).
	Dir string
	// Kubeconfig is a kubeconfig file for the cluster's administrator
	// (group system:masters), for kubectl and client-go alike.
	Kubeconfig string
	// URL is the apiserver's address, https://ADDRESS:PORT.
	URL string
	// Config is the administrator's client configuration; Client a
	// clientset made from it.
	Config *rest.Config
	Client kubernetes.Interface
	// CAFile is the CA that signed every certificate of the cluster; the
	// apiserver trusts client certificates it signs. CAKeyFile is its key
	// (the controller-manager signs CSRs with it).
	CAFile, CAKeyFile string

	address net.IP
	procs   []*proc
	pki     *pki
}

// ServingCert issues a serving certificate of the cluster's CA for name
// (a node's kubelet API) with ips, and returns its files.
func (cp *ControlPlane) ServingCert(name string, ips ...net.IP) (certFile, keyFile string, err error) {
	kp, err := cp.pki.serving(name, []string{name}, ips)
	if err != nil {
		return "", "", fmt.Errorf("issuing a serving certificate for %s: %w", name, err)
	}
	return kp.CertFile, kp.KeyFile, nil
}

// PIDs are the components' processes, in start order.
func (cp *ControlPlane) PIDs() []int {
	var pids []int
	for _, p := range cp.procs {
		pids = append(pids, p.cmd.Process.Pid)
	}
	return pids
}

// Start starts etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler, in that order, each once the one before it answers, and
// returns when the apiserver reports itself ready. On an error what it
// started is stopped, and the error ends with the tails of their logs.
func Start(opts Options) (*ControlPlane, error) {
	if opts.BinDir == "" {
		dir, err := BinDir()
		if err != nil {
			return nil, err
		}
		opts.BinDir = dir
	}
	if err := Built(opts.BinDir); err != nil {
		return nil, err
	}
	cp := &ControlPlane{BinDir: opts.BinDir, Dir: opts.Dir, address: opts.Address}
	if cp.address == nil {
		cp.address = net.IPv4(127, 0, 0, 1)
	}
	if err := cp.start(); err != nil {
		cp.Stop()
		return nil, fmt.Errorf("%w\n%s", err, cp.LogTails(20))
	}
	return cp, nil
}

func (cp *ControlPlane) start() error {
	pkiDir := filepath.Join(cp.Dir, "pki")
	if err := os.Mkdir(pkiDir, 0o700); err != nil {
		return err
	}
	ca, err := newPKI(pkiDir)
	if err != nil {
		return err
	}
	cp.pki = ca
	cp.CAFile, cp.CAKeyFile = ca.caFile(), filepath.Join(pkiDir, "ca.key")
	serviceIP, _, err := net.ParseCIDR(ServiceCIDR)
	if err != nil {
		return err
	}
	serviceIP = serviceIP.To4()
	serviceIP[3]++
	serving, err := ca.serving("apiserver",
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, serviceIP, cp.address})
	if err != nil {
		return err
	}
	// The apiserver's client certificate for kubelets (exec, logs,
	// port-forward on the nodes): a node checks it against the CA.
	kubeletClient, err := ca.client("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters")
	if err != nil {
		return err
	}
	saKey, saPub, err := ca.serviceAccountKey()
	if err != nil {
		return err
	}
	ports, err := freePorts(5)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, apiPort, cmPort, schedPort := ports[0], ports[1], ports[2], ports[3], ports[4]

	// etcd serves plain HTTP on loopback: only the apiserver talks to it,
	// and the test's data dies with the test.
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	if err := cp.run("etcd",
		"--name=kubetest",
		"--data-dir="+filepath.Join(cp.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=kubetest="+peerURL,
		"--unsafe-no-fsync", "--log-level=warn",
	); err != nil {
		return err
	}
	if err := cp.await("etcd", func(ctx context.Context) error { return httpOK(ctx, http.DefaultClient, etcdURL+"/health") }); err != nil {
		return err
	}

	addr := cp.address.String()
	cp.URL = "https://" + net.JoinHostPort(addr, strconv.Itoa(apiPort))
	if err := cp.run("kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address="+addr, "--advertise-address="+addr, "--secure-port="+strconv.Itoa(apiPort),
		// The endpoint reconciler refuses a loopback address, and no
		// Pod reaches the apiserver through the kubernetes Service here:
		// nothing keeps that Service's endpoints.
		"--endpoint-reconciler-type=none",
		"--tls-cert-file="+serving.CertFile, "--tls-private-key-file="+serving.KeyFile,
		"--client-ca-file="+cp.CAFile,
		"--kubelet-client-certificate="+kubeletClient.CertFile, "--kubelet-client-key="+kubeletClient.KeyFile,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+saPub, "--service-account-signing-key-file="+saKey,
		"--service-cluster-ip-range="+ServiceCIDR,
		"--authorization-mode=Node,RBAC",
		// Nodes' kubelet APIs (hutch's) serve certificates of the CA.
		"--kubelet-certificate-authority="+cp.CAFile,
		"--kubelet-preferred-address-types=InternalIP",
	); err != nil {
		return err
	}
	admin, err := ca.client("admin", "kubetest-admin", "system:masters")
	if err != nil {
		return err
	}
	cp.Config = &rest.Config{
		Host: cp.URL,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: ca.caPEM, CertData: admin.CertPEM, KeyData: admin.KeyPEM,
		},
	}
	if cp.Kubeconfig, err = cp.writeKubeconfig("admin", "kubetest-admin", admin); err != nil {
		return err
	}
	if cp.Client, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return fmt.Errorf("making the administrator's client: %w", err)
	}
	ready := func(ctx context.Context) error {
		_, err := cp.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}
	if err := cp.await("kube-apiserver", ready); err != nil {
		return err
	}

	cm, err := ca.client("controller-manager", "system:kube-controller-manager")
	if err != nil {
		return err
	}
	cmConfig, err := cp.writeKubeconfig("controller-manager", "system:kube-controller-manager", cm)
	if err != nil {
		return err
	}
	cmServing, err := ca.serving("controller-manager-serving", []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return err
	}
	if err := cp.run("kube-controller-manager",
		"--tls-cert-file="+cmServing.CertFile, "--tls-private-key-file="+cmServing.KeyFile,
		"--kubeconfig="+cmConfig, "--authentication-kubeconfig="+cmConfig, "--authorization-kubeconfig="+cmConfig,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(cmPort),
		"--leader-elect=false",
		"--use-service-account-credentials",
		"--service-account-private-key-file="+saKey,
		"--root-ca-file="+cp.CAFile,
		"--cluster-signing-cert-file="+cp.CAFile, "--cluster-signing-key-file="+cp.CAKeyFile,
		"--service-cluster-ip-range="+ServiceCIDR,
		// A node that stops renewing its Lease is NotReady within
		// about NodeMonitorGrace (the default, 50s, is long for a test).
		"--node-monitor-period=1s", "--node-monitor-grace-period="+NodeMonitorGrace.String(),
	); err != nil {
		return err
	}
	sched, err := ca.client("scheduler", "system:kube-scheduler")
	if err != nil {
		return err
	}
	schedConfig, err := cp.writeKubeconfig("scheduler", "system:kube-scheduler", sched)
	if err != nil {
		return err
	}
	schedServing, err := ca.serving("scheduler-serving", []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return err
	}
	if err := cp.run("kube-scheduler",
		"--tls-cert-file="+schedServing.CertFile, "--tls-private-key-file="+schedServing.KeyFile,
		"--kubeconfig="+schedConfig, "--authentication-kubeconfig="+schedConfig, "--authorization-kubeconfig="+schedConfig,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(schedPort),
		"--leader-elect=false",
	); err != nil {
		return err
	}
	// Each serves /healthz on its secure port with a certificate of the
	// cluster's CA; anonymous requests to it are allowed by default.
	roots := x509.NewCertPool()
	roots.AddCert(ca.ca)
	verified := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	for name, port := range map[string]int{"kube-controller-manager": cmPort, "kube-scheduler": schedPort} {
		url := "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz"
		if err := cp.await(name, func(ctx context.Context) error { return httpOK(ctx, verified, url) }); err != nil {
			return err
		}
	}
	return nil
}

// writeKubeconfig writes a kubeconfig for user with kp's client
// certificate to NAME.kubeconfig in the control plane's directory.
func (cp *ControlPlane) writeKubeconfig(name, user string, kp keyPair) (string, error) {
	caPEM, err := os.ReadFile(cp.CAFile)
	if err != nil {
		return "", err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubetest"] = &clientcmdapi.Cluster{Server: cp.URL, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: kp.CertPEM, ClientKeyData: kp.KeyPEM}
	cfg.Contexts["kubetest"] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: user}
	cfg.CurrentContext = "kubetest"
	file := filepath.Join(cp.Dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, file); err != nil {
		return "", fmt.Errorf("writing %s: %w", file, err)
	}
	return file, nil
}

// proc is a running component.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	// done is closed when the process has exited; err is then its
	// exit status.
	done chan struct{}
	err  error
}

// run starts the component name from BinDir with args, its output in
// NAME.log.
func (cp *ControlPlane) run(name string, args ...string) error {
	return cp.runBin(name, filepath.Join(cp.BinDir, name), args...)
}

// runBin starts the program bin as component name.
func (cp *ControlPlane) runBin(name, bin string, args ...string) error {
	logFile := filepath.Join(cp.Dir, name+".log")
	out, err := os.Create(logFile)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	// A test binary that dies takes its control plane with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logFile, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	cp.procs = append(cp.procs, p)
	return nil
}

// await calls check until it succeeds, the component name exits, or
// startTimeout passes.
func (cp *ControlPlane) await(name string, check func(context.Context) error) error {
	var p *proc
	for _, q := range cp.procs {
		if q.name == name {
			p = q
		}
	}
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := check(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it answered: %v", name, p.err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer within %v: %w", name, startTimeout, err)
		}
	}
}

// Stop ends the components in reverse order: SIGTERM, then SIGKILL for
// one that has not exited after a grace. It may be called more than once.
func (cp *ControlPlane) Stop() {
	for i := len(cp.procs) - 1; i >= 0; i-- {
		p := cp.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// LogTails is the end (n lines) of each component's log.
func (cp *ControlPlane) LogTails(n int) string {
	var b strings.Builder
	for _, p := range cp.procs {
		fmt.Fprintf(&b, "%s log (last lines of %s):\n%s\n", p.name, p.log, tail(p.log, n))
	}
	return b.String()
}

// tail is the last n lines of file.
func tail(file string, n int) string {
	f, err := os.Open(file)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func httpOK(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(url + ": " + resp.Status)
	}
	return nil
}
