package envelope

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestFunctionNotFound checks the one mapping of an unknown function id,
// shared by every transport, and that its docs section exists.
func TestFunctionNotFound(t *testing.T) {
	err := fmt.Errorf("%w: sandbox::nope", functions.ErrNotFound)
	env := From(err)
	if env.Code != CodeFunctionNotFound || env.Type != "validation" || env.Retryable ||
		!strings.Contains(env.Message, "sandbox::nope") {
		t.Fatalf("envelope = %+v", env)
	}
	if got := HTTPStatus(err); got != http.StatusNotFound {
		t.Fatalf("HTTPStatus = %d, want 404", got)
	}
	doc, rerr := os.ReadFile(filepath.Join(testutil.RepoRoot(), "docs", "errors.md"))
	if rerr != nil {
		t.Fatal(rerr)
	}
	anchor := env.DocsURL[strings.LastIndex(env.DocsURL, "#")+1:]
	if !strings.Contains(string(doc), "\n## "+anchor+"\n") {
		t.Errorf("docs/errors.md has no section %q", anchor)
	}
}
