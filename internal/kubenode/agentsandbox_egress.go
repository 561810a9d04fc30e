package kubenode

// issue 36: 2 — an agent-sandbox SandboxTemplate's egress rules
// (networkPolicy) enforced by hutch's egress policy on the node: no
// network plugin enforces a NetworkPolicy on a virtual node. The rules are
// read from the NetworkPolicy agent-sandbox's controller manages for the
// template (its own, or the controller's default), found from the Pod
// through its Sandbox.

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	k8serrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hutch-dev/hutch/api"
)

// annotationTemplateRef names a Sandbox's SandboxTemplate (agent-sandbox's
// warm pool and claim controllers set it).
const annotationTemplateRef = "agents.x-k8s.io/sandbox-template-ref"

var templatesGVR = schema.GroupVersionResource{Group: "extensions." + agentSandboxGroup, Version: "v1beta1", Resource: "sandboxtemplates"}

// policyWait bounds the wait for the template's NetworkPolicy, which the
// controller makes as the template is made.
const policyWait = 30 * time.Second

// templateEgress is the egress policy hutch enforces for Pod k: that of
// the NetworkPolicy agent-sandbox manages for the SandboxTemplate of the
// Sandbox controlling k. Nil for none (not such a Pod, a Sandbox without a
// template, a template whose policy is Unmanaged); bad says why hutch
// cannot enforce it (the Pod fails).
func (p *provider) templateEgress(ctx context.Context, k *corev1.Pod) (pol *api.EgressPolicy, bad string) {
	uid, name := agentSandboxOf(k)
	if uid == "" || p.dyn == nil {
		return nil, ""
	}
	sb, err := p.dyn.Resource(sandboxesGVR).Namespace(k.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, "reading the Pod's agent-sandbox Sandbox for its egress rules: " + err.Error()
	}
	tmpl := sb.GetAnnotations()[annotationTemplateRef]
	if tmpl == "" {
		return nil, ""
	}
	t, err := p.dyn.Resource(templatesGVR).Namespace(k.Namespace).Get(ctx, tmpl, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Sprintf("reading SandboxTemplate %s for its egress rules: %v", tmpl, err)
	}
	if m, _, _ := unstructured.NestedString(t.Object, "spec", "networkPolicyManagement"); m == "Unmanaged" {
		return nil, ""
	}
	npName := tmpl + "-network-policy"
	var np *networkingv1.NetworkPolicy
	deadline := time.Now().Add(policyWait)
	for {
		np, err = p.client.NetworkingV1().NetworkPolicies(k.Namespace).Get(ctx, npName, metav1.GetOptions{})
		if err == nil || !k8serrors.IsNotFound(err) || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err().Error()
		case <-time.After(time.Second):
		}
	}
	if err != nil {
		return nil, fmt.Sprintf("SandboxTemplate %s's NetworkPolicy %s: %v", tmpl, npName, err)
	}
	if ref := metav1.GetControllerOf(np); ref == nil || ref.UID != t.GetUID() {
		return nil, fmt.Sprintf("NetworkPolicy %s is not SandboxTemplate %s's", npName, tmpl)
	}
	return egressOf(np.Spec)
}

// egressOf is a NetworkPolicy's egress as hutch's egress policy (nil when
// it restricts no egress), or why hutch cannot enforce it. Each rule
// allows its IPv4 blocks (0.0.0.0/0 for none) on its ports (any for none)
// in allow_out; a block's exceptions go to deny_out, which hutch applies
// to every rule: refused where another block overlaps them. Peers by pod
// or namespace selector, named ports, port ranges and SCTP are refused;
// IPv6 blocks are left out (a sandbox has no IPv6 egress). Ingress is not
// read: nothing of the cluster's network reaches a hutch sandbox.
func egressOf(spec networkingv1.NetworkPolicySpec) (*api.EgressPolicy, string) {
	restricts := slices.Contains(spec.PolicyTypes, networkingv1.PolicyTypeEgress) || (len(spec.PolicyTypes) == 0 && len(spec.Egress) > 0)
	if !restricts {
		return nil, ""
	}
	type block struct {
		net  *net.IPNet
		peer int
	}
	var allows, excepts []block
	pol := &api.EgressPolicy{}
	peer := 0
	for i, r := range spec.Egress {
		ports, bad := policyPorts(r.Ports)
		if bad != "" {
			return nil, fmt.Sprintf("egress rule %d: %s", i, bad)
		}
		to := r.To
		if len(to) == 0 {
			to = []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}}}
		}
		for _, pr := range to {
			peer++
			if pr.IPBlock == nil {
				return nil, fmt.Sprintf("egress rule %d: peers by pod or namespace selector cannot be enforced on a hutch node (its sandboxes are not on the cluster's Pod network); use ipBlock", i)
			}
			_, n, err := net.ParseCIDR(pr.IPBlock.CIDR)
			if err != nil {
				return nil, fmt.Sprintf("egress rule %d: ipBlock %q: %v", i, pr.IPBlock.CIDR, err)
			}
			if n.IP.To4() == nil {
				continue
			}
			allows = append(allows, block{n, peer})
			for _, port := range ports {
				pol.AllowOut = append(pol.AllowOut, n.String()+port)
			}
			for _, ex := range pr.IPBlock.Except {
				_, e, err := net.ParseCIDR(ex)
				if err != nil {
					return nil, fmt.Sprintf("egress rule %d: except %q: %v", i, ex, err)
				}
				if e.IP.To4() != nil {
					excepts = append(excepts, block{e, peer})
					pol.DenyOut = append(pol.DenyOut, e.String())
				}
			}
		}
	}
	for _, e := range excepts {
		for _, a := range allows {
			if a.peer != e.peer && (a.net.Contains(e.net.IP) || e.net.Contains(a.net.IP)) {
				return nil, fmt.Sprintf("the exception %s of one egress peer overlaps %s allowed by another: hutch's deny_out applies to every rule", e.net, a.net)
			}
		}
	}
	if len(pol.AllowOut) == 0 { // nothing allowed: hutch's empty allow_out would allow all
		pol.DenyOut = []string{"0.0.0.0/0"}
	}
	return pol, ""
}

// policyPorts are a rule's ports as the suffixes of hutch's entries
// (":443"; "" for any port).
func policyPorts(ports []networkingv1.NetworkPolicyPort) ([]string, string) {
	if len(ports) == 0 {
		return []string{""}, ""
	}
	var out []string
	for _, pp := range ports {
		switch {
		case pp.Protocol != nil && *pp.Protocol == corev1.ProtocolSCTP:
			return nil, "SCTP cannot be enforced on a hutch node"
		case pp.Port == nil:
			out = append(out, "")
		case pp.Port.Type == intstr.String:
			return nil, fmt.Sprintf("named port %q cannot be enforced on a hutch node; use its number", pp.Port.StrVal)
		case pp.EndPort != nil && *pp.EndPort != pp.Port.IntVal:
			return nil, fmt.Sprintf("the port range %d-%d cannot be enforced on a hutch node", pp.Port.IntVal, *pp.EndPort)
		default:
			out = append(out, ":"+strconv.Itoa(int(pp.Port.IntVal)))
		}
	}
	if slices.Contains(out, "") {
		return []string{""}, ""
	}
	return out, ""
}
