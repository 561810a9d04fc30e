package agent_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
)

// issue 40: user metadata set by an upload, read back by Stat and Ls,
// bounded, and a refused write leaves nothing.
func TestFsMetadata(t *testing.T) {
	c, d := fsTree(t)
	ctx := context.Background()
	md := map[string]string{"author": "alice", "build-id": "42"}
	_, err := c.Upload(ctx, &agentv1.FsUploadHeader{Path: d + "/m.txt", Metadata: md}, strings.NewReader("x"), nil)
	wantKind(t, err, none)
	e, err := c.Stat(ctx, &agentv1.FsStatRequest{Path: d + "/m.txt"})
	wantKind(t, err, none)
	if !maps.Equal(e.GetMetadata(), md) {
		t.Fatalf("stat metadata %v, want %v", e.GetMetadata(), md)
	}
	ls, err := c.Ls(ctx, &agentv1.FsLsRequest{Path: d})
	wantKind(t, err, none)
	for _, e := range ls.GetEntries() {
		if e.GetName() == "m.txt" {
			if !maps.Equal(e.GetMetadata(), md) {
				t.Errorf("ls metadata of %s: %v", e.GetName(), e.GetMetadata())
			}
		} else if len(e.GetMetadata()) != 0 {
			t.Errorf("ls metadata of %s: %v, want none", e.GetName(), e.GetMetadata())
		}
	}
	// A rewrite replaces the file and its metadata.
	_, err = c.Upload(ctx, &agentv1.FsUploadHeader{Path: d + "/m.txt", Metadata: map[string]string{"author": "bob"}}, strings.NewReader("y"), nil)
	wantKind(t, err, none)
	if e, _ := c.Stat(ctx, &agentv1.FsStatRequest{Path: d + "/m.txt"}); !maps.Equal(e.GetMetadata(), map[string]string{"author": "bob"}) {
		t.Errorf("after a rewrite: %v", e.GetMetadata())
	}

	many := map[string]string{}
	for i := range agentv1.MaxFsMetadataKeys + 1 {
		many[fmt.Sprint("k", i)] = "v"
	}
	for name, bad := range map[string]map[string]string{
		"too many keys":    many,
		"too many bytes":   {"big": strings.Repeat("v", agentv1.MaxFsMetadataBytes)},
		"empty key":        {"": "v"},
		"key with slash":   {"a/b": "v"},
		"control in key":   {"a\x00b": "v"},
		"control in value": {"k": "a\nb"},
		"non-ascii value":  {"k": "é"},
	} {
		_, err := c.Upload(ctx, &agentv1.FsUploadHeader{Path: d + "/bad.txt", Metadata: bad}, strings.NewReader("x"), nil)
		wantKind(t, err, invalid)
		if _, err := c.Stat(ctx, &agentv1.FsStatRequest{Path: d + "/bad.txt"}); err == nil {
			t.Errorf("%s: the refused write left a file", name)
		}
	}
	// A device keeps no metadata.
	_, err = c.Upload(ctx, &agentv1.FsUploadHeader{Path: "/dev/null", Metadata: md}, strings.NewReader("x"), nil)
	wantKind(t, err, unsupported)
}
