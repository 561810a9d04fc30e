package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

// hostile is text a sandbox or an image could choose: a terminal title
// change, a screen clear, a bidi override and a newline that would fake a
// table row.
const hostile = "\x1b]0;pwned\x07\x1b[2J\u202eevil\nfake-row"

func TestTablesEscapeControlCharacters(t *testing.T) {
	name := hostile
	fake := &functionstest.Fake{ListFunc: func(context.Context, api.ListRequest) (api.ListResponse, error) {
		return api.ListResponse{Sandboxes: []api.SandboxInfo{
			{SandboxID: id, Name: &name, Image: "python", Stopped: true, StopReason: "sandbox exited unexpectedly: " + hostile},
		}}, nil
	}}
	list, errOut, code := newHarness(t, fake).run("", "list")
	if code != 0 {
		t.Fatalf("list: code %d, stderr %q", code, errOut)
	}
	var images strings.Builder
	if err := printImages(&images, []api.ImageInfo{{Name: "x", Kind: "custom", State: "missing", OCIRef: hostile}}); err != nil {
		t.Fatal(err)
	}
	for what, out := range map[string]string{"list": list, "image ls": images.String()} {
		if strings.ContainsAny(out, "\x1b\x07\u202e") || strings.Count(out, "\n") != 2 {
			t.Errorf("%s printed raw control characters:\n%q", what, out)
		}
		if !strings.Contains(out, `\x1b]0;pwned\x07\x1b[2J\u202eevil\nfake-row`) {
			t.Errorf("%s: the escaped text is missing:\n%s", what, out)
		}
	}
}
