package kubenode

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestEgressOf: a NetworkPolicy's egress as hutch's egress policy, and
// what hutch cannot enforce refused with a reason.
func TestEgressOf(t *testing.T) {
	egress := []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	block := func(cidr string, except ...string) networkingv1.NetworkPolicyPeer {
		return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr, Except: except}}
	}
	port := func(p int) networkingv1.NetworkPolicyPort {
		v := intstr.FromInt32(int32(p))
		return networkingv1.NetworkPolicyPort{Port: &v}
	}
	named := intstr.FromString("https")
	sctp, end := corev1.ProtocolSCTP, int32(90)
	for _, tc := range []struct {
		name        string
		spec        networkingv1.NetworkPolicySpec
		allow, deny []string
		nilPolicy   bool
		bad         string
	}{
		{name: "ingress only", spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}, nilPolicy: true},
		{name: "no egress rule denies all", spec: networkingv1.NetworkPolicySpec{PolicyTypes: egress}, deny: []string{"0.0.0.0/0"}},
		{name: "agent-sandbox's default: public internet", spec: networkingv1.NetworkPolicySpec{PolicyTypes: egress, Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{
			block("0.0.0.0/0", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"), block("::/0", "fc00::/7")}}}},
			allow: []string{"0.0.0.0/0"}, deny: []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"}},
		{name: "ports without peers", spec: networkingv1.NetworkPolicySpec{PolicyTypes: egress, Egress: []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{port(443), port(53)}}}},
			allow: []string{"0.0.0.0/0:443", "0.0.0.0/0:53"}},
		{name: "blocks and ports", spec: networkingv1.NetworkPolicySpec{PolicyTypes: egress, Egress: []networkingv1.NetworkPolicyEgressRule{
			{To: []networkingv1.NetworkPolicyPeer{block("203.0.113.0/24")}, Ports: []networkingv1.NetworkPolicyPort{port(443)}},
			{To: []networkingv1.NetworkPolicyPeer{block("198.51.100.7/32")}}}},
			allow: []string{"203.0.113.0/24:443", "198.51.100.7/32"}},
		{name: "IPv6 only allows nothing", spec: networkingv1.NetworkPolicySpec{PolicyTypes: egress, Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{block("::/0")}}}},
			deny: []string{"0.0.0.0/0"}},
		{name: "a pod selector", spec: networkingv1.NetworkPolicySpec{PolicyTypes: egress, Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}}},
			bad: "pod or namespace selector"},
		{name: "a named port", spec: networkingv1.NetworkPolicySpec{PolicyTypes: egress, Egress: []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: &named}}}}},
			bad: "named port"},
		{name: "a port range", spec: networkingv1.NetworkPolicySpec{PolicyTypes: egress, Egress: []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{func() networkingv1.NetworkPolicyPort { p := port(80); p.EndPort = &end; return p }()}}}},
			bad: "port range"},
		{name: "SCTP", spec: networkingv1.NetworkPolicySpec{PolicyTypes: egress, Egress: []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &sctp}}}}},
			bad: "SCTP"},
		{name: "an exception another peer allows", spec: networkingv1.NetworkPolicySpec{PolicyTypes: egress, Egress: []networkingv1.NetworkPolicyEgressRule{
			{To: []networkingv1.NetworkPolicyPeer{block("0.0.0.0/0", "10.0.0.0/8")}},
			{To: []networkingv1.NetworkPolicyPeer{block("10.1.2.3/32")}, Ports: []networkingv1.NetworkPolicyPort{port(5432)}}}},
			bad: "overlaps"},
	} {
		pol, bad := egressOf(tc.spec)
		switch {
		case tc.bad != "":
			if !strings.Contains(bad, tc.bad) || pol != nil {
				t.Errorf("%s: %+v %q, want refused for %q", tc.name, pol, bad, tc.bad)
			}
		case bad != "":
			t.Errorf("%s: refused: %s", tc.name, bad)
		case tc.nilPolicy:
			if pol != nil {
				t.Errorf("%s: %+v, want no policy", tc.name, pol)
			}
		case pol == nil || !slices.Equal(pol.AllowOut, tc.allow) || !slices.Equal(pol.DenyOut, tc.deny):
			t.Errorf("%s: %+v, want allow %v deny %v", tc.name, pol, tc.allow, tc.deny)
		}
	}
}
