package functions_test

import (
	"slices"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

// TestTools: the functions offered as MCP tools have unique names, known
// areas and descriptions; only a stream collects; each describes itself
// with its tool, and the others with none.
func TestTools(t *testing.T) {
	table := functions.New(functionstest.StubDeps())
	seen := map[string]string{}
	for _, f := range table.Functions() {
		info := f.Info()
		tool, ok := info.Metadata[api.MetadataTool].(api.Tool)
		if f.Tool == nil {
			if ok {
				t.Errorf("%s describes a tool it is not", f.ID)
			}
			continue
		}
		if !ok || tool != *f.Tool {
			t.Errorf("%s describes its tool as %v", f.ID, info.Metadata)
		}
		if other, dup := seen[tool.Name]; dup {
			t.Errorf("%s and %s are both the tool %s", f.ID, other, tool.Name)
		}
		seen[tool.Name] = f.ID
		if !slices.Contains(api.ToolAreas, tool.Area) || tool.Description == "" {
			t.Errorf("%s: area %q, description %q", f.ID, tool.Area, tool.Description)
		}
		if tool.Collect > 0 && !f.Streams {
			t.Errorf("%s collects but does not stream", f.ID)
		}
		if tool.ReadOnly && tool.Destructive {
			t.Errorf("%s reads only and destroys", f.ID)
		}
	}
	if len(seen) < 39-24 {
		t.Errorf("%d functions are tools", len(seen))
	}
}
