package kubecp

// issue 36: 2 — kubernetes-sigs/agent-sandbox's own controller and CRDs,
// built unmodified from its module by `make kube-deps` and run against a
// control plane (the cluster tests, hutch bench --cluster).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	k8serrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
)

// AgentSandboxVersion is the version of sigs.k8s.io/agent-sandbox pinned
// in deps/agentsandbox/go.mod (kubetest's TestVersions checks they agree).
const AgentSandboxVersion = "v0.5.0"

// AgentSandboxController is the controller's program in AgentSandboxDir's
// bin.
const AgentSandboxController = "agent-sandbox-controller"

// AgentSandboxNamespace is where the controller keeps its webhook
// certificate's Secret (its --webhook-namespace default).
const AgentSandboxNamespace = "agent-sandbox-system"

// crdGVR is the CustomResourceDefinitions' API.
var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// AgentSandboxDir is where `make kube-deps` puts agent-sandbox's build:
// KUBE_CACHE/agent-sandbox-VERSION, with bin/agent-sandbox-controller and
// crds/*.yaml (the module's k8s/crds).
func AgentSandboxDir() (string, error) {
	cache, err := cacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "agent-sandbox-"+AgentSandboxVersion), nil
}

// AgentSandboxBuilt is nil when dir holds the controller and the CRDs.
func AgentSandboxBuilt(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "bin", AgentSandboxController)); err != nil {
		return fmt.Errorf("agent-sandbox not built (run `make kube-deps`): %w", err)
	}
	if crds, _ := filepath.Glob(filepath.Join(dir, "crds", "*.yaml")); len(crds) == 0 {
		return fmt.Errorf("agent-sandbox's CRDs not in %s (run `make kube-deps`)", dir)
	}
	return nil
}

// StartAgentSandbox applies agent-sandbox's CRDs from dir (AgentSandboxDir
// when "") and starts its controller, with its extensions (SandboxTemplate,
// SandboxClaim, SandboxWarmPool), as the administrator, its log in
// agent-sandbox-controller.log; Stop stops it with the rest. It returns
// once the CRDs are established and the controller answers its readiness
// check.
func (cp *ControlPlane) StartAgentSandbox(dir string) error {
	if dir == "" {
		var err error
		if dir, err = AgentSandboxDir(); err != nil {
			return err
		}
	}
	if err := AgentSandboxBuilt(dir); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := cp.applyCRDs(ctx, filepath.Join(dir, "crds")); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: AgentSandboxNamespace}}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !k8serrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", AgentSandboxNamespace, err)
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	probe := "127.0.0.1:" + strconv.Itoa(ports[1])
	// The CRDs' conversion webhook (v1alpha1 ↔ v1beta1) is served but not
	// reached: everything here speaks v1beta1, the stored version.
	if err := cp.runBin(AgentSandboxController, filepath.Join(dir, "bin", AgentSandboxController),
		"--kubeconfig="+cp.Kubeconfig,
		"--extensions",
		"--leader-elect=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address="+probe,
		"--webhook-port="+strconv.Itoa(ports[0]),
		"--webhook-cert-dir="+filepath.Join(cp.Dir, "agent-sandbox-webhook"),
	); err != nil {
		return err
	}
	return cp.await(AgentSandboxController, func(ctx context.Context) error { return httpOK(ctx, http.DefaultClient, "http://"+probe+"/readyz") })
}

// applyCRDs creates each CustomResourceDefinition of dir's YAML files and
// waits for it to be established.
func (cp *ControlPlane) applyCRDs(ctx context.Context, dir string) error {
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	var names []string
	for _, f := range files {
		objs, err := readObjects(f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if _, err := dyn.Resource(crdGVR).Create(ctx, o, metav1.CreateOptions{}); err != nil && !k8serrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating CRD %s from %s: %w", o.GetName(), f, err)
			}
			names = append(names, o.GetName())
		}
	}
	for _, name := range names {
		for {
			o, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if err == nil && established(o) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not established: %w", name, errors.Join(err, ctx.Err()))
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// established says CRD o's Established condition is True.
func established(o *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// readObjects reads the YAML documents of file.
func readObjects(file string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 64<<10)
	var out []*unstructured.Unstructured
	for {
		o := map[string]any{}
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		if len(o) > 0 {
			out = append(out, &unstructured.Unstructured{Object: o})
		}
	}
}
