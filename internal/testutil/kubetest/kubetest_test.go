package kubetest

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/kubecp"
	"github.com/hutch-dev/hutch/internal/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestControlPlane starts the control plane and reads the namespaces the
// apiserver makes for itself, through client-go and through kubectl with
// the kubeconfig; and the controller-manager, once it runs, gives the
// default namespace its service account.
func TestControlPlane(t *testing.T) {
	cp := Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	want := []string{"default", "kube-node-lease", "kube-public", "kube-system"}
	testutil.EventuallyNil(t, time.Minute, func() error {
		list, err := cp.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var names []string
		for _, ns := range list.Items {
			names = append(names, ns.Name)
		}
		for _, n := range want {
			if !slices.Contains(names, n) {
				return fmt.Errorf("no %s among %v", n, names)
			}
		}
		return nil
	}, "namespaces %v listed by client-go", want)

	out, err := exec.CommandContext(ctx, filepath.Join(cp.BinDir, "kubectl"), "--kubeconfig", cp.Kubeconfig,
		"get", "namespaces", "-o", "name").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get namespaces: %v\n%s", err, out)
	}
	for _, n := range want {
		if !strings.Contains(string(out), "namespace/"+n+"\n") {
			t.Errorf("kubectl get namespaces lists no %s:\n%s", n, out)
		}
	}

	// The service-account controller runs in the controller-manager.
	testutil.EventuallyNil(t, time.Minute, func() error {
		_, err := cp.Client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	}, "the default service account made by the controller-manager")
}

// TestVersions: the pinned versions the Makefile builds are what BinDir
// names, and the built binaries say they are those versions.
func TestVersions(t *testing.T) {
	kube, etcd, err := Versions()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(kube, "v1.") || !strings.HasPrefix(etcd, "v3.") {
		t.Fatalf("Versions() = %s, %s; want a Kubernetes v1 and an etcd v3", kube, etcd)
	}
	if kube != kubecp.KubeVersion || etcd != kubecp.EtcdVersion {
		t.Errorf("deps/kube pins %s and %s; kubecp names %s and %s", kube, etcd, kubecp.KubeVersion, kubecp.EtcdVersion)
	}
	dir := RequiresControlPlane(t)
	if !strings.Contains(dir, "kube-"+kube+"-etcd-"+etcd) {
		t.Errorf("BinDir %s does not name kube-%s-etcd-%s", dir, kube, etcd)
	}
	for _, c := range []struct{ bin, want string }{
		{"kube-apiserver", "Kubernetes " + kube},
		{"kube-controller-manager", "Kubernetes " + kube},
		{"kube-scheduler", "Kubernetes " + kube},
		{"kubectl", "Client Version: " + kube},
		{"etcd", "etcd Version: " + strings.TrimPrefix(etcd, "v")},
	} {
		args := []string{"--version"}
		if c.bin == "kubectl" {
			args = []string{"version", "--client"}
		}
		out, err := exec.Command(filepath.Join(dir, c.bin), args...).CombinedOutput()
		if err != nil {
			t.Errorf("%s %s: %v\n%s", c.bin, strings.Join(args, " "), err, out)
			continue
		}
		if !strings.Contains(string(out), c.want) {
			t.Errorf("%s %s printed %q; want %q in it", c.bin, strings.Join(args, " "), out, c.want)
		}
	}
}
