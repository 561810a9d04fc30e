package integration

// issue 36: the cluster API on the loopback cluster of TestCluster (its
// control plane, its network): two hutch nodes with cluster.api and
// api_tokens; a create on node A, cordoned, lands on node B and every
// call through A reaches it, for its owner only.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/clusterapi"
	"github.com/hutch-dev/hutch/internal/kubenode"
	"github.com/hutch-dev/hutch/internal/testutil"
	"github.com/hutch-dev/hutch/internal/testutil/kubetest"
)

const (
	clusterAliceToken = "alice-token-0123456789abcdef"
	clusterBobToken   = "bob-token-0123456789abcdef01"
	clusterPeerToken  = "peer-token-0123456789abcdef0"
	clusterCarolToken = "carol-token-0123456789abcdef"
	clusterAliceE2B   = "e2b_0123456789abcdef0123456789abcdef01234567"
)

// apiNet is TestClusterAPI's network, apart from the other cluster tests'.
var apiNet = clusterNet{bridge: "ca-br", subnet: "10.236.36.", netnsPrefix: "ca-api-", vethPrefix: "ca-v"}

// carolQuota is carol's quota.owners.carol.sandboxes: her namespace's
// ResourceQuota's pods.
const carolQuota = 5

func TestClusterAPI(t *testing.T) {
	testutil.RequiresIntegration(t)
	binaries(t)
	nodes := apiNet.make(t, 2)
	cp := kubetest.StartAt(t, apiNet.host())
	kc := cp.Client
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	extra := fmt.Sprintf("  api: true\n  peer_token: %s\napi_tokens:\n  alice: %s\n  bob: %s\n  carol: %s\npreview_domain: localhost\nquota:\n  owners:\n    carol:\n      sandboxes: %d\ne2b:\n  api_keys:\n    alice: %s\n",
		clusterPeerToken, clusterAliceToken, clusterBobToken, clusterCarolToken, carolQuota, clusterAliceE2B)
	names := []string{"hutch-api-0", "hutch-api-1"}
	daemons := make([]*daemon, len(names))
	for i := range daemons {
		daemons[i] = startClusterDaemon(t, cp, names[i], nodes[i], extra)
	}
	testutil.EventuallyNil(t, 2*time.Minute, func() error { return nodesReady(ctx, kc, names, true) }, "the hutch Nodes Ready")
	for i, n := range names {
		node, err := kc.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := node.Annotations[kubenode.AnnotationAPIURL]; got != daemons[i].url {
			t.Fatalf("node %s's API URL %q, its daemon's %q", n, got, daemons[i].url)
		}
	}
	// A is cordoned: the scheduler must place A's create on B.
	a, b := daemons[0], daemons[1]
	cordon := func(on bool) { cordonNode(t, ctx, kc, names[0], on) }
	cordon(true)
	defer cordon(false)
	alice := client.New(a.url, clusterAliceToken)
	created, err := alice.Create(ctx, api.CreateRequest{Image: "python", Metadata: map[string]string{"purpose": "cluster-api"}})
	if err != nil {
		t.Fatalf("create through node A: %v\n%s", err, a.log)
	}
	id := created.SandboxID
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
		defer scancel()
		_, _ = alice.Stop(sctx, id, true)
	})
	// Its Pod: in alice's namespace, on B, carrying the owner.
	ns := kubenode.OwnerNamespace("hutch-", "alice")
	pods, err := kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubenode.LabelAPI + "=true"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("alice's Pods in %s: %v %v", ns, pods, err)
	}
	pod := pods.Items[0]
	if pod.Spec.NodeName != names[1] || pod.Labels[kubenode.LabelOwner] != "alice" || pod.Status.ContainerStatuses[0].ContainerID != kubenode.ContainerIDPrefix+id {
		t.Fatalf("the create's Pod: node %q, labels %v, container %q; want node %s, sandbox %s", pod.Spec.NodeName, pod.Labels, pod.Status.ContainerStatuses[0].ContainerID, names[1], id)
	}
	// B holds the sandbox, with the create's options; A does not.
	info, err := client.New(b.url, clusterAliceToken).Get(ctx, id)
	if err != nil || info.Metadata["purpose"] != "cluster-api" {
		t.Fatalf("the sandbox on B: %+v %v", info, err)
	}

	t.Run("exec through A", func(t *testing.T) {
		res, err := alice.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"sh", "-c", "echo hello from $(hostname)"}})
		if err != nil || res.ExitCode == nil || *res.ExitCode != 0 || !strings.HasPrefix(res.Stdout, "hello from") {
			t.Fatalf("exec through A: %+v %v", res, err)
		}
		// A streamed exec: its events pass through as they come.
		var events int
		streamed, err := alice.ExecStream(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"sh", "-c", "echo one; echo two"}},
			func(string, json.RawMessage) error { events++; return nil })
		if err != nil || streamed.ExitCode == nil || *streamed.ExitCode != 0 || events == 0 {
			t.Fatalf("a streamed exec through A: %+v, %d events, %v", streamed, events, err)
		}
		// The function endpoint: the sandbox_id in the body finds B.
		var out api.ExecResponse
		if err := alice.Call(ctx, api.FnExec, api.ExecRequest{SandboxID: id, Argv: []string{"echo", "via the function endpoint"}}, &out); err != nil || strings.TrimSpace(out.Stdout) != "via the function endpoint" {
			t.Fatalf("sandbox::exec through A's function endpoint: %+v %v", out, err)
		}
	})

	t.Run("preview by host through A", func(t *testing.T) {
		// {port}-{id}.localhost names the sandbox by its host: A sends
		// the request whole to B, which checks the owner's token.
		if _, err := alice.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Tag: "web",
			Argv: []string{"python3", "-m", "http.server", "8000", "--bind", "127.0.0.1", "--directory", "/"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := alice.ExposePort(ctx, api.PortExposeRequest{SandboxID: id, Port: 8000}); err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(strings.TrimPrefix(a.url, "http://"))
		host := "8000-" + id + ".localhost:" + port
		aliceAuth := map[string]string{"Authorization": "Bearer " + clusterAliceToken}
		var body string
		if !testutil.Poll(time.Minute, func() bool {
			var status int
			status, body, _ = hostGet(t, a, host, "/", aliceAuth)
			return status == http.StatusOK && strings.Contains(body, "Directory listing")
		}) {
			t.Fatalf("the sandbox's server on B through A's preview host: %.300s", body)
		}
		if status, body, _ := hostGet(t, a, host, "/", map[string]string{"Authorization": "Bearer " + clusterBobToken}); status != http.StatusNotFound {
			t.Fatalf("bob through the preview host: %d %.200s, want 404", status, body)
		}
	})

	t.Run("terminal through A", func(t *testing.T) {
		// The PTY WebSocket's upgrade is forwarded as it came.
		tm, err := alice.Terminal(ctx, id, client.TerminalOptions{Cmd: []string{"sh", "-c", "echo pty-ok; exit 5"}})
		if err != nil {
			t.Fatalf("a terminal through A: %v", err)
		}
		defer tm.Close()
		out, _ := io.ReadAll(tm)
		code, err := tm.Wait()
		if err != nil || code != 5 || !strings.Contains(string(out), "pty-ok") {
			t.Fatalf("a terminal through A: exit %d %v, output %q", code, err, out)
		}
	})

	t.Run("upload and download through A", func(t *testing.T) {
		data := make([]byte, 4<<20)
		_, _ = rand.Read(data)
		if _, err := alice.Upload(ctx, api.FsUploadRequest{SandboxID: id, Path: "/tmp/blob"}, bytes.NewReader(data)); err != nil {
			t.Fatalf("upload through A: %v", err)
		}
		res, err := alice.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"sha256sum", "/tmp/blob"}})
		if want := fmt.Sprintf("%x", sha256.Sum256(data)); err != nil || !strings.HasPrefix(res.Stdout, want) {
			t.Fatalf("the uploaded file's sha256: %q %v, want %s", res.Stdout, err, want)
		}
		_, rc, err := alice.Download(ctx, api.FsDownloadRequest{SandboxID: id, Path: "/tmp/blob"})
		if err != nil {
			t.Fatalf("download through A: %v", err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("download through A: %d bytes (of %d), equal %v, %v", len(got), len(data), bytes.Equal(got, data), err)
		}
	})

	t.Run("MCP tool through A", func(t *testing.T) {
		// The table's call is forwarded: a file tool on the uploaded file.
		hc := &http.Client{Transport: bearerTransport{clusterAliceToken}}
		cs := mcpSession(t, &mcp.StreamableClientTransport{Endpoint: a.url + "/mcp?tools=all", HTTPClient: hc}, nil)
		defer cs.Close()
		res, out := callTool(t, cs, "file_stat", map[string]any{"sandbox_id": id, "path": "/tmp/blob"}, nil)
		if res.IsError || !strings.Contains(out, strconv.Itoa(4<<20)) {
			t.Fatalf("file_stat through A's MCP: %q", out)
		}
	})

	t.Run("streamed MCP tool through A", func(t *testing.T) {
		// event_wait streams sandbox::events::stream: forwarded to B,
		// whose events carry its name.
		hc := &http.Client{Transport: bearerTransport{clusterAliceToken}}
		cs := mcpSession(t, &mcp.StreamableClientTransport{Endpoint: a.url + "/mcp?tools=all", HTTPClient: hc}, nil)
		defer cs.Close()
		res, out := callTool(t, cs, "event_wait", map[string]any{"sandbox_id": id, "type": api.EventSandboxCreated, "after": "0", "wait_secs": 30}, nil)
		if res.IsError || !strings.Contains(out, api.EventSandboxCreated) || !strings.Contains(out, `"node":"`+names[1]+`"`) {
			t.Fatalf("event_wait through A's MCP: %q", out)
		}
	})

	t.Run("E2B SDK through A", func(t *testing.T) {
		// The stock e2b package: its create lands on B, its command and
		// files go through A's envd routes (forwarded to B whole, where
		// the access token A gave is good), its kill stops the sandbox.
		// It asks for the python image: the nodes run in network
		// namespaces that cannot reach Debian's mirror, and in a fresh
		// image cache only the images earlier tests built are there.
		nodeBin := testutil.RequiresBinary(t, "node")
		modules := testutil.NodeModules(t, "conformance", filepath.Join("e2b", "package.json"))
		script := `const { Sandbox } = require('e2b')
;(async () => {
  const sbx = await Sandbox.create('python', { timeoutMs: 300000 })
  try {
    const r = await sbx.commands.run('echo e2b-ok; echo err >&2')
    await sbx.files.write('/tmp/e2b-file', 'written through A')
    const file = await sbx.files.read('/tmp/e2b-file')
    console.log(JSON.stringify({ id: sbx.sandboxId, stdout: r.stdout, stderr: r.stderr, exit: r.exitCode, file }))
  } finally {
    await sbx.kill()
  }
})().catch((e) => { console.error(e); process.exit(1) })`
		nctx, ncancel := context.WithTimeout(ctx, 3*time.Minute)
		defer ncancel()
		cmd := exec.CommandContext(nctx, nodeBin, "-e", script)
		cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "E2B_API_URL="+a.url, "E2B_SANDBOX_URL="+a.url, "E2B_API_KEY="+clusterAliceE2B)
		out, err := cmd.Output()
		var got struct {
			ID, Stdout, Stderr, File string
			Exit                     int
		}
		if err != nil || json.Unmarshal(out, &got) != nil || got.Stdout != "e2b-ok\n" || got.Stderr != "err\n" || got.Exit != 0 || got.File != "written through A" {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("the E2B SDK through A: %v, %s\n%s", err, out, stderr)
		}
		// It ran on B, and the kill stopped it there.
		info, err := client.New(b.url, clusterAliceToken).Get(ctx, got.ID)
		var env *api.ErrorEnvelope
		if !(errors.As(err, &env) && env.Code == "S002") && !(err == nil && info.Stopped) {
			t.Fatalf("the E2B sandbox on B after its kill: %+v %v", info, err)
		}
		evs, err := client.New(b.url, clusterAliceToken).ListEvents(ctx, api.EventsRequest{SandboxID: got.ID, Type: api.EventSandboxCreated})
		if err != nil || len(evs.Events) != 1 || evs.Events[0].Node != names[1] {
			t.Fatalf("the E2B sandbox's sandbox.created on B: %+v %v", evs, err)
		}
	})

	t.Run("another owner", func(t *testing.T) {
		// bob's token reaches no sandbox of alice's, through A or on B.
		for _, d := range []*daemon{a, b} {
			bob := client.New(d.url, clusterBobToken)
			_, err := bob.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"true"}})
			var env *api.ErrorEnvelope
			if !errors.As(err, &env) || env.Code != "S002" {
				t.Fatalf("bob's exec in alice's sandbox through %s: %v, want S002", d.url, err)
			}
		}
	})

	t.Run("forwarded without the credential", func(t *testing.T) {
		// A call to B that says it comes from a node, without the
		// cluster's credential or with a wrong one, is refused.
		body := `{"sandbox_id":"` + id + `","argv":["true"]}`
		for _, tok := range []string{"", "wrong-token-0123456789abcdef"} {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url+"/v1/sandboxes/"+id+"/exec", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set(clusterapi.HeaderOwner, "alice")
			if tok != "" {
				req.Header.Set(clusterapi.HeaderToken, tok)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("a forwarded call with token %q: %s %s", tok, resp.Status, msg)
			}
		}
	})

	t.Run("quota from the cluster", func(t *testing.T) {
		// carol's namespace carries her limits as a ResourceQuota: the
		// apiserver refuses her 6th sandbox with hutch's S401 and its
		// reason; another owner creates as before. (A stays cordoned:
		// A's own per-node check counts none of them.)
		carol := client.New(a.url, clusterCarolToken)
		var made []string
		defer func() {
			for _, sid := range made {
				_, _ = carol.Stop(context.WithoutCancel(ctx), sid, false)
			}
		}()
		for i := range carolQuota {
			c, err := carol.Create(ctx, api.CreateRequest{Image: "python"})
			if err != nil {
				t.Fatalf("carol's create %d of %d: %v", i+1, carolQuota, err)
			}
			made = append(made, c.SandboxID)
		}
		_, err := carol.Create(ctx, api.CreateRequest{Image: "python"})
		var env *api.ErrorEnvelope
		if !errors.As(err, &env) || env.Code != "S401" || !strings.Contains(env.Message, "exceeded quota") {
			t.Fatalf("carol's create over her quota: %v, want S401 with the apiserver's reason", err)
		}
		q, err := kc.CoreV1().ResourceQuotas(kubenode.OwnerNamespace("hutch-", "carol")).Get(ctx, clusterapi.QuotaName, metav1.GetOptions{})
		if err != nil || q.Spec.Hard.Pods().Value() != carolQuota {
			t.Fatalf("carol's ResourceQuota: %+v %v", q, err)
		}
		bob := client.New(a.url, clusterBobToken)
		c, err := bob.Create(ctx, api.CreateRequest{Image: "python"})
		if err != nil {
			t.Fatalf("bob's create beside carol's full quota: %v", err)
		}
		if _, err := bob.Stop(ctx, c.SandboxID, false); err != nil {
			t.Fatal(err)
		}
		if qs, err := kc.CoreV1().ResourceQuotas(kubenode.OwnerNamespace("hutch-", "bob")).List(ctx, metav1.ListOptions{}); err != nil || len(qs.Items) != 0 {
			t.Fatalf("bob, without limits, has quotas: %v %v", qs, err)
		}
	})

	t.Run("list across nodes", func(t *testing.T) {
		// A second sandbox, made through B with B cordoned: on A.
		cordon(false)
		cordonNode(t, ctx, kc, names[1], true)
		defer cordonNode(t, ctx, kc, names[1], false)
		other, err := client.New(b.url, clusterAliceToken).Create(ctx, api.CreateRequest{Image: "python"})
		if err != nil {
			t.Fatalf("create through B: %v", err)
		}
		defer alice.Stop(context.WithoutCancel(ctx), other.SandboxID, false)
		if _, err := alice.Get(ctx, other.SandboxID); err != nil {
			t.Fatalf("the sandbox B made, on A: %v", err)
		}
		want := []string{id, other.SandboxID}
		for _, d := range daemons {
			c := client.New(d.url, clusterAliceToken)
			running := []string{"running"} // the E2B SDK's killed sandbox is listed as stopped
			list, err := c.ListFiltered(ctx, api.ListRequest{State: running})
			if err != nil || !sameIDs(list.Sandboxes, want) {
				t.Fatalf("alice's list through %s: %+v %v, want %v", d.url, list.Sandboxes, err, want)
			}
			// Pages of one: the token of the first reaches the second.
			first, err := c.ListFiltered(ctx, api.ListRequest{Limit: 1, State: running})
			if err != nil || len(first.Sandboxes) != 1 || first.NextToken == "" {
				t.Fatalf("a page of 1 through %s: %+v %v", d.url, first, err)
			}
			var second api.ListResponse // through the function endpoint
			err = c.Call(ctx, api.FnList, api.ListRequest{Limit: 1, NextToken: first.NextToken, State: running}, &second)
			if err != nil || !sameIDs(append(first.Sandboxes, second.Sandboxes...), want) || second.NextToken != "" {
				t.Fatalf("the second page through %s: %+v %v", d.url, second, err)
			}
			if bobs, err := client.New(d.url, clusterBobToken).ListFiltered(ctx, api.ListRequest{}); err != nil ||
				slices.ContainsFunc(bobs.Sandboxes, func(s api.SandboxInfo) bool { return slices.Contains(want, s.SandboxID) }) {
				t.Fatalf("bob's list through %s: %+v %v", d.url, bobs, err)
			}
			// Each entry says its node.
			for _, sb := range list.Sandboxes {
				if want := map[string]string{id: names[1], other.SandboxID: names[0]}[sb.SandboxID]; sb.Node != want {
					t.Fatalf("%s's node through %s: %q, want %q", sb.SandboxID, d.url, sb.Node, want)
				}
			}
		}
		// Events of both nodes in one listing and one stream, each with
		// its node, through either node.
		wantNodes := map[string]string{id: names[1], other.SandboxID: names[0]}
		for _, d := range daemons {
			c := client.New(d.url, clusterAliceToken)
			evs, err := c.ListEvents(ctx, api.EventsRequest{Type: api.EventSandboxCreated})
			got := map[string]string{}
			for _, ev := range evs.Events {
				if _, ok := wantNodes[ev.SandboxID]; ok {
					got[ev.SandboxID] = ev.Node
				}
			}
			if err != nil || !maps.Equal(got, wantNodes) {
				t.Fatalf("alice's sandbox.created events through %s: %v %v, want %v", d.url, got, err, wantNodes)
			}
			sctx, scancel := context.WithTimeout(ctx, time.Minute)
			got = map[string]string{}
			err = c.StreamEvents(sctx, api.EventsRequest{Type: api.EventSandboxCreated}, func(ev api.EventRecord) error {
				if _, ok := wantNodes[ev.SandboxID]; ok {
					got[ev.SandboxID] = ev.Node
				}
				if len(got) == len(wantNodes) {
					scancel()
				}
				return nil
			})
			scancel()
			if !maps.Equal(got, wantNodes) {
				t.Fatalf("alice's event stream through %s: %v (%v), want %v", d.url, got, err, wantNodes)
			}
		}
	})

	t.Run("stop through A", func(t *testing.T) {
		if _, err := alice.Stop(ctx, id, true); err != nil {
			t.Fatalf("stop through A: %v", err)
		}
		testutil.EventuallyNil(t, time.Minute, func() error {
			left, err := kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err == nil && len(left.Items) > 0 {
				err = fmt.Errorf("%d Pods left in %s", len(left.Items), ns)
			}
			return err
		}, "the stopped sandbox's Pod deleted")
	})
}

// cordonNode marks node unschedulable (on) or schedulable again.
func cordonNode(t *testing.T, ctx context.Context, kc kubernetes.Interface, node string, on bool) {
	t.Helper()
	patch := []byte(`{"spec":{"unschedulable":` + strconv.FormatBool(on) + `}}`)
	if _, err := kc.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// sameIDs says list holds exactly the sandboxes ids, in any order.
func sameIDs(list []api.SandboxInfo, ids []string) bool {
	got := make([]string, 0, len(list))
	for _, s := range list {
		got = append(got, s.SandboxID)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(ids))
	return slices.Equal(got, want)
}

// bearerTransport sends its token with every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
