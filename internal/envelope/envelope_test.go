package envelope

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestDocsCoverEveryCode checks that every code's docs_url anchor exists in
// docs/errors.md.
func TestDocsCoverEveryCode(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "docs", "errors.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range errdefs.Codes() {
		url := DocsURL(code)
		anchor := url[strings.LastIndex(url, "#")+1:]
		if !strings.Contains(string(doc), "\n## "+anchor+"\n") {
			t.Errorf("docs/errors.md has no section %q for %s", anchor, code)
		}
	}
}

func TestFrom(t *testing.T) {
	err := errdefs.New(errdefs.CodeImagePull, "pull failed").WithFix(map[string]any{"retry": true}, "try again")
	env := From(err)
	if env.Code != "S102" || env.Type != "transient" || !env.Retryable || env.FixNote != "try again" || !strings.HasSuffix(env.DocsURL, "#s102") {
		t.Fatalf("envelope = %+v", env)
	}
	plain := From(os.ErrClosed)
	if plain.Code != "S500" || plain.Type != "internal" {
		t.Fatalf("plain error envelope = %+v", plain)
	}
}

func TestHTTPStatus(t *testing.T) {
	tests := map[errdefs.Code]int{
		errdefs.CodeMalformed:       http.StatusBadRequest,
		errdefs.CodeNotFound:        http.StatusNotFound,
		errdefs.CodeExecBusy:        http.StatusConflict,
		errdefs.CodeStopped:         http.StatusConflict,
		errdefs.CodeImageNotAllowed: http.StatusForbidden,
		errdefs.CodeImageMissing:    http.StatusUnprocessableEntity,
		errdefs.CodeImagePull:       http.StatusServiceUnavailable,
		errdefs.CodeOperatorOnly:    http.StatusForbidden,
		errdefs.CodeExecTimeout:     http.StatusGatewayTimeout,
		errdefs.CodeFSNotFound:      http.StatusNotFound,
		errdefs.CodeFSIO:            http.StatusInternalServerError,
		errdefs.CodeFSBadRegex:      http.StatusBadRequest,
		errdefs.CodeBootFailed:      http.StatusServiceUnavailable,
		errdefs.CodeCapacity:        http.StatusTooManyRequests,
		errdefs.CodeInternal:        http.StatusInternalServerError,
		errdefs.CodeImageInUse:      http.StatusConflict,
		errdefs.CodeShuttingDown:    http.StatusServiceUnavailable,
		errdefs.CodeFSWrongType:     http.StatusConflict,
		errdefs.CodeFSUnsupported:   http.StatusBadRequest,
		errdefs.CodeFSStreamAborted: http.StatusServiceUnavailable,
	}
	for code, want := range tests {
		if got := HTTPStatus(errdefs.New(code, "x")); got != want {
			t.Errorf("HTTPStatus(%s) = %d, want %d", code, got, want)
		}
	}
}

// TestEveryKindHasAStatus checks that no code falls through to a default.
func TestEveryKindHasAStatus(t *testing.T) {
	for _, code := range errdefs.Codes() {
		if _, ok := kindStatus[code.Kind()]; !ok {
			t.Errorf("%s: kind %d has no HTTP status", code, code.Kind())
		}
	}
}

// TestFromKeepsOuterContext checks that the envelope's message is the
// whole message of a wrapped error, not only the innermost one.
func TestFromKeepsOuterContext(t *testing.T) {
	err := fmt.Errorf("recording sandbox X: %w", errdefs.New(errdefs.CodeInternal, "disk full"))
	if env := From(err); env.Message != "recording sandbox X: disk full" || env.Code != "S500" {
		t.Fatalf("envelope = %+v", env)
	}
}
