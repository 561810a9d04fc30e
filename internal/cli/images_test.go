package cli

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

func TestCatalogAndImageCommands(t *testing.T) {
	tests := []struct {
		args []string
		want []string // substrings of stdout, in order
		call string   // the fake's method the command calls
	}{
		{[]string{"catalog"}, []string{"NAME", "KIND", "SOURCE", "python", "preset", "debian:bookworm", "node",
			"RUNTIME", "MODE", "AVAILABLE", "ABILITIES", "gvisor (default)", "systrap", "yes", "pause", "microvm", "no: qemu-system-x86_64 not found"}, "Catalog"},
		{[]string{"image", "ls"}, []string{"NAME", "STATE", "ALLOWED", "python", "ready", "yes", "node"}, "ImageList"},
		{[]string{"image", "rm", "node"}, []string{"node: removed\n"}, "ImageRemove"},
		{[]string{"image", "pull", "python"}, []string{"python: ready 0123456789ab (1.0MB) in "}, "ImagePull"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fake := &functionstest.Fake{}
			out, errOut, code := newHarness(t, fake).run("", tt.args...)
			if code != 0 || errOut != "" {
				t.Fatalf("code %d, stderr %q", code, errOut)
			}
			wantInOrder(t, "stdout", out, tt.want)
			if m := fake.Methods(); len(m) != 1 || m[0] != tt.call {
				t.Errorf("calls = %v, want [%s]", m, tt.call)
			}
		})
	}
}

func TestCatalogJSON(t *testing.T) {
	out, _, code := newHarness(t, &functionstest.Fake{}).run("", "catalog", "--json")
	var cat api.CatalogResponse
	if err := json.Unmarshal([]byte(out), &cat); code != 0 || err != nil || len(cat.Images) != 2 || cat.Images[0].Name != "python" {
		t.Fatalf("code %d, %v: %s", code, err, out)
	}
	if !strings.Contains(out, `"oci_ref"`) || !strings.Contains(out, `"kind": "preset"`) {
		t.Errorf("JSON lacks the contract's fields: %s", out)
	}
}

func TestImageErrors(t *testing.T) {
	out, errOut, code := newHarness(t, &functionstest.Fake{}).run("", "image", "rm", "ruby")
	if code != 1 || out != "" || !strings.HasPrefix(errOut, "hutch: S100: ") {
		t.Errorf("image rm ruby: code %d stdout %q stderr %q", code, out, errOut)
	}
	_, errOut, code = newHarness(t, &functionstest.Fake{}).run("", "image", "pull")
	if code != 2 || !strings.Contains(errOut, "accepts 1 arg") {
		t.Errorf("image pull without a name: code %d stderr %q", code, errOut)
	}
}

// pullingFake pulls for a few status polls before ImagePull answers.
type pullingFake struct {
	*functionstest.Fake
	ready chan struct{}
}

func (f *pullingFake) ImagePull(ctx context.Context, req api.ImagePullRequest) (api.ImageStatus, error) {
	select {
	case <-f.ready:
	case <-ctx.Done():
		return api.ImageStatus{}, ctx.Err()
	}
	return f.Fake.ImagePull(ctx, req)
}

func TestImagePullProgress(t *testing.T) {
	for _, tty := range []bool{false, true} {
		fake := &pullingFake{Fake: &functionstest.Fake{}, ready: make(chan struct{})}
		var polls atomic.Int32
		fake.ImageStatusFunc = func(_ context.Context, req api.ImageStatusRequest) (api.ImageStatus, error) {
			if polls.Add(1) == 4 {
				close(fake.ready)
			}
			if polls.Load() >= 4 {
				return api.ImageStatus{Name: req.Name, State: "ready"}, nil
			}
			return api.ImageStatus{Name: req.Name, State: "pulling", ElapsedSecs: 2, Detail: "layer 1/2: 4 MB\x1b[31m"}, nil
		}
		srv := httptest.NewServer(httpapi.New(functions.New(functionstest.DepsOf(fake)), httpapi.Options{}))
		t.Cleanup(srv.Close)
		h := &harness{t: t, fake: fake.Fake, env: map[string]string{"HUTCH_URL": srv.URL}, tty: map[string]bool{"stderr": tty}}
		out, errOut, code := h.run("", "image", "pull", "python")
		if code != 0 || !strings.HasPrefix(out, "python: ready ") {
			t.Fatalf("tty=%v: code %d stdout %q stderr %q", tty, code, out, errOut)
		}
		want := []string{"pulling image python…\n", "pulling image python… done in 2s\n"}
		if tty {
			want = []string{"\r\x1b[Kpulling image python… 2s  layer 1/2: 4 MB[31m", "\r\x1b[Kpulling image python… done in 2s\n"}
		}
		wantInOrder(t, "stderr", errOut, want)
	}
}

func TestImageRmInUse(t *testing.T) {
	fake := &rmBusyFake{Fake: &functionstest.Fake{}}
	srv := httptest.NewServer(httpapi.New(functions.New(functionstest.DepsOf(fake)), httpapi.Options{}))
	t.Cleanup(srv.Close)
	h := &harness{t: t, fake: fake.Fake, env: map[string]string{"HUTCH_URL": srv.URL}, tty: map[string]bool{}}
	_, errOut, code := h.run("", "image", "rm", "python")
	if code != 1 || !strings.Contains(errOut, "hutch: S001: image python is in use") || !strings.Contains(errOut, "hint: stop the sandboxes") {
		t.Errorf("code %d stderr %q", code, errOut)
	}
}

type rmBusyFake struct{ *functionstest.Fake }

func (f *rmBusyFake) ImageRemove(context.Context, api.ImageRemoveRequest) (api.ImageRemoveResponse, error) {
	return api.ImageRemoveResponse{}, errdefs.Malformed("image python is in use by sandboxes %s", id).
		WithFix(nil, "stop the sandboxes that use it (hutch stop ID), then remove it")
}

// wantInOrder fails t unless text holds each of want, in that order.
func wantInOrder(t *testing.T, what, text string, want []string) {
	t.Helper()
	rest := text
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("%s %q lacks %q (in order)", what, text, w)
		}
		rest = rest[i+len(w):]
	}
}
