package portsvc

import (
	"context"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox/sandboxtest"
)

// TestPreviewTerms: a sandbox's host_header reaches every target of it,
// ${PORT} filled; private voids its public tokens and refuses new ones;
// AnyPort reaches an unexposed port of the caller's sandbox only; bad
// terms and another owner's sandbox change nothing.
func TestPreviewTerms(t *testing.T) {
	var sbs sandboxtest.Sandboxes
	s := New(&sbs, Options{})
	alice, bob := auth.WithOwner(context.Background(), "alice"), auth.WithOwner(context.Background(), "bob")
	sb := sbs.Add("alice")
	pub, err := s.ExposePort(alice, api.PortExposeRequest{SandboxID: sb.ID, Port: 5173, Public: true})
	if err != nil {
		t.Fatal(err)
	}
	token := pub.URL[len("/p/") : len(pub.URL)-1]
	terms := api.PreviewOptions{HostHeader: "app.test:${PORT}", Private: true}

	if err := s.SetPreview(alice, sb.ID, api.PreviewOptions{HostHeader: "a b"}); !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Errorf("a bad host_header: %v, want S001", err)
	}
	if err := s.SetPreview(bob, sb.ID, terms); !errdefs.Is(err, errdefs.CodeNotFound) {
		t.Errorf("another owner's sandbox: %v, want S002", err)
	}
	if s.Private(sb.ID) {
		t.Fatal("refused terms were kept")
	}
	if err := s.SetPreview(alice, sb.ID, terms); err != nil {
		t.Fatal(err)
	}
	if !s.Private(sb.ID) {
		t.Error("not private")
	}
	if _, ok := s.PublicPort(token); ok {
		t.Error("a private sandbox's public token still opens its port")
	}
	if _, err := s.ExposePort(alice, api.PortExposeRequest{SandboxID: sb.ID, Port: 8000, Public: true}); !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Errorf("a public port of a private sandbox: %v, want S001", err)
	}
	if tg, err := s.PortFor(alice, sb.ID, 5173); err != nil || tg.Host != "app.test:5173" {
		t.Errorf("PortFor: %+v %v", tg, err)
	}
	if tg, err := s.AnyPort(alice, sb.ID, 9000); err != nil || tg.Host != "app.test:9000" || tg.owner != "alice" || tg.Port != 9000 {
		t.Errorf("AnyPort: %+v %v", tg, err)
	}
	if _, err := s.AnyPort(bob, sb.ID, 9000); !errdefs.Is(err, errdefs.CodeNotFound) {
		t.Errorf("AnyPort of another owner's sandbox: %v, want S002", err)
	}
	s.Forget(sb.ID)
	if s.Private(sb.ID) {
		t.Error("the terms outlived the sandbox")
	}
}
