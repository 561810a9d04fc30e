package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/storefmt"
)

// TestWebhooksFormat: webhooks.json as a bare list (format 0, before
// formats) is read, written back in format 1 and read again; one of a
// newer format is refused (issue 38: 7).
func TestWebhooksFormat(t *testing.T) {
	w := &webhookAdmin{path: filepath.Join(t.TempDir(), "webhooks.json")}
	old := `[{"id":"wh-1","url":"https://example.com/h","events":["sandbox.*"],"secret":"s"}]`
	if err := os.WriteFile(w.path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	hooks, err := w.read()
	if err != nil || len(hooks) != 1 || hooks[0].ID != "wh-1" || hooks[0].URL != "https://example.com/h" {
		t.Fatalf("format 0: %+v, %v", hooks, err)
	}
	if err := w.write(hooks); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(w.path)
	if storefmt.IsArray(b) || !strings.Contains(string(b), `"format": 1`) {
		t.Fatalf("written: %s", b)
	}
	if again, err := w.read(); err != nil || len(again) != 1 || again[0].ID != "wh-1" {
		t.Fatalf("format 1: %+v, %v", again, err)
	}
	if err := os.WriteFile(w.path, []byte(`{"format":2,"webhooks":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := w.read(); err == nil || !strings.Contains(err.Error(), "format 2, newer than this daemon's 1") {
		t.Fatalf("format 2: %v", err)
	}
}
