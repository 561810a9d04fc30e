// Package kubetest runs a real Kubernetes control plane for tests (issue
// 35: 5): etcd, kube-apiserver, kube-controller-manager and kube-scheduler,
// built by `make kube-deps` (part of `make deps`) at the versions pinned in
// deps/kube, started on loopback ports with certificates generated for the
// test, and stopped when the test ends.
//
// Nothing here is a fake: the binaries are the release's, run as separate
// processes. There is no kubelet; the cluster's nodes are what the test
// registers.
package kubetest

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
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/testutil"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// startTimeout bounds the wait for each component to answer: etcd and the
// apiserver start in seconds, but a loaded two-core machine is slow.
const startTimeout = 2 * time.Minute

// ServiceCIDR is the cluster's service network; the apiserver's serving
// certificate names its first address (the kubernetes Service's).
const ServiceCIDR = "10.96.0.0/24"

// Versions are the Kubernetes and etcd versions pinned in deps/kube/go.mod
// and deps/kube/etcd/go.mod, read as the Makefile reads them.
func Versions() (kube, etcd string, err error) {
	root := filepath.Join(testutil.RepoRoot(), "deps", "kube")
	if kube, err = pinned(filepath.Join(root, "go.mod"), "k8s.io/kubernetes"); err != nil {
		return "", "", err
	}
	if etcd, err = pinned(filepath.Join(root, "etcd", "go.mod"), "go.etcd.io/etcd/server/v3"); err != nil {
		return "", "", err
	}
	return kube, etcd, nil
}

// pinned is the version go.mod file requires of module: the word after
// the module's path on the line that starts with it.
func pinned(file, module string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == module {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("%s requires no version of %s", file, module)
}

// BinDir is where `make kube-deps` puts the pinned control plane's
// binaries: KUBE_CACHE/kube-VERSION-etcd-VERSION/bin, where KUBE_CACHE is
// $HUTCH_KUBE_CACHE, else /var/cache/hutch for root, else
// $XDG_CACHE_HOME/hutch (~/.cache/hutch). The Makefile's KUBE_DIR is the
// same rule.
func BinDir() (string, error) {
	kube, etcd, err := Versions()
	if err != nil {
		return "", err
	}
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
	return filepath.Join(cache, "kube-"+kube+"-etcd-"+etcd, "bin"), nil
}

// binaries are the programs a control plane runs, all in BinDir.
var binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"}

// RequiresControlPlane skips t (or fails it when integration is required)
// unless it may start a control plane: not -short, and the binaries built
// by `make kube-deps`. It returns their directory.
func RequiresControlPlane(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		testutil.Skip(t, "control-plane test skipped in -short mode")
	}
	dir, err := BinDir()
	if err != nil {
		testutil.Skip(t, "finding the control plane's binaries: "+err.Error())
	}
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			testutil.Skip(t, "control plane not built (run `make kube-deps`): "+err.Error())
		}
	}
	return dir
}

// ControlPlane is a running control plane. Its processes are stopped, and
// its directory removed, when the test that started it ends.
type ControlPlane struct {
	// BinDir holds the binaries it runs (kubectl among them).
	BinDir string
	// Dir holds its certificates, kubeconfigs, etcd's data and each
	// component's log (NAME.log).
	Dir string
	// Kubeconfig is a kubeconfig file for the cluster's administrator
	// (group system:masters), for kubectl and client-go alike.
	Kubeconfig string
	// URL is the apiserver's address, https://127.0.0.1:PORT.
	URL string
	// Config is the administrator's client configuration; Client a
	// clientset made from it.
	Config *rest.Config
	Client kubernetes.Interface
	// CAFile is the CA that signed every certificate of the cluster; the
	// apiserver trusts client certificates it signs. CAKeyFile is its key
	// (the controller-manager signs CSRs with it).
	CAFile, CAKeyFile string

	procs []*proc
	pki   *pki
	t     testing.TB
}

// NodeMonitorGrace is the controller-manager's --node-monitor-grace-period:
// a node whose Lease is older is marked NotReady.
const NodeMonitorGrace = 20 * time.Second

// ServingCert issues a serving certificate of the cluster's CA for name
// (a node's kubelet API) with ips, and returns its files.
func (cp *ControlPlane) ServingCert(name string, ips ...net.IP) (certFile, keyFile string) {
	cp.t.Helper()
	kp, err := cp.pki.serving(name, []string{name}, ips)
	if err != nil {
		cp.t.Fatalf("issuing a serving certificate for %s: %v", name, err)
	}
	return kp.CertFile, kp.KeyFile
}

// Start starts etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler, in that order, each once the one before it answers, and
// returns when the apiserver reports itself ready. It fails t if any of
// them does not start; the components' logs are in t's output when t
// fails.
func Start(t testing.TB) *ControlPlane {
	t.Helper()
	bin := RequiresControlPlane(t)
	cp := &ControlPlane{BinDir: bin, Dir: t.TempDir()}
	cp.t = t
	t.Cleanup(cp.stop)
	// Cleanups run in reverse: the logs are read before the stop.
	t.Cleanup(func() {
		if t.Failed() {
			cp.logTails(t)
		}
	})
	if err := cp.start(); err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	return cp
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
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, serviceIP})
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

	cp.URL = "https://127.0.0.1:" + strconv.Itoa(apiPort)
	if err := cp.run("kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(apiPort),
		// The endpoint reconciler refuses a loopback address: nothing
		// keeps the kubernetes Service's endpoints (no Pod reaches the
		// apiserver through it here).
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
	logFile := filepath.Join(cp.Dir, name+".log")
	out, err := os.Create(logFile)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(filepath.Join(cp.BinDir, name), args...)
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

// stop ends the components in reverse order: SIGTERM, then SIGKILL for
// one that has not exited after a grace. It may be called more than once.
func (cp *ControlPlane) stop() {
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

// logTails logs the end of each component's log.
func (cp *ControlPlane) logTails(t testing.TB) {
	t.Helper()
	for _, p := range cp.procs {
		t.Logf("%s log (last lines of %s):\n%s", p.name, p.log, tail(p.log, 30))
	}
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
