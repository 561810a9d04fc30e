package envd

import (
	"maps"
	"net/http"
	"testing"
)

// TestUploadMetadata (issue 40): X-Metadata-* headers are the file's
// metadata, keys lower case whatever case the client sent them in.
func TestUploadMetadata(t *testing.T) {
	h := http.Header{}
	h.Set("X-Metadata-Author", "alice")
	h["x-metadata-build-id"] = []string{"42"}
	h.Set("Content-Type", "application/octet-stream")
	if got, want := uploadMetadata(h), map[string]string{"author": "alice", "build-id": "42"}; !maps.Equal(got, want) {
		t.Errorf("metadata %v, want %v", got, want)
	}
	if got := uploadMetadata(http.Header{"Content-Type": {"text/plain"}}); got != nil {
		t.Errorf("without metadata headers: %v", got)
	}
}
