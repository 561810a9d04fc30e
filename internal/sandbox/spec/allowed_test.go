package spec

import (
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// TestAllowed: an image in both the catalog and the allowlist passes; any
// other is S100 listing those that would, an empty name S001.
func TestAllowed(t *testing.T) {
	catalog, allowlist := []string{"python", "node", "go"}, []string{"node", "python", "ruby"}
	if err := Allowed("node", catalog, allowlist); err != nil {
		t.Errorf("node: %v", err)
	}
	for name, want := range map[string]string{
		"go":            "allowed images: python, node",
		"ruby":          "allowed images: python, node",
		"docker.io/x:1": "not an OCI reference",
	} {
		if err := Allowed(name, catalog, allowlist); !errdefs.Is(err, errdefs.CodeImageNotAllowed) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want S100 with %q", name, err, want)
		}
	}
	if err := Allowed("node", catalog, nil); err == nil || !strings.Contains(err.Error(), "none (image_allowlist is empty)") {
		t.Errorf("empty allowlist: %v", err)
	}
	if err := Allowed("", catalog, allowlist); !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Errorf("no image: %v, want S001", err)
	}
}

// TestWithFix: S242's hint names the allowed images that have the
// command, or says to install it when none is allowed.
func TestWithFix(t *testing.T) {
	if got, want := WithFix([]string{"node", "python", "go"}, []string{"go", "node"}, "npm"), "use an image with npm (node, go), or install it"; got != want {
		t.Errorf("WithFix = %q, want %q", got, want)
	}
	if got, want := WithFix([]string{"node"}, []string{"python"}, "npm"), "install npm in the sandbox (no image this daemon allows has it)"; got != want {
		t.Errorf("WithFix = %q, want %q", got, want)
	}
}
