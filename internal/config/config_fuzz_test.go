package config

import (
	"bytes"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzParse reads hostile config files and checks: what Parse accepts
// passes Validate, and marshals to YAML that parses back to a Config
// that marshals the same (a round trip: `hutch config` output is a valid config).
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "max_sandboxes: 4\n", "listen: 127.0.0.1:7070\nmax_sandboxes: -1\n",
		"workers:\n  - name: iii-sandbox\n    config:\n      max_sandboxes: 3\n",
		"owners:\n  alice:\n    max_sandboxes: 2\n", "a: &a [*a, *a]\n", "preview_domain: Preview.Example.com\n",
		"runtimes:\n  gvisor:\n    enabled: true\n", "{max_sandboxes: 1e9}", "- 1\n- 2\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data)
		if err != nil {
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Parse accepted a config Validate refuses: %v", err)
		}
		out, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatalf("marshalling an accepted config: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("the marshalled config does not parse: %v\n%s", err, out)
		}
		out2, err := yaml.Marshal(again)
		if err != nil {
			t.Fatalf("marshalling the config read back: %v", err)
		}
		if !bytes.Equal(out, out2) {
			t.Fatalf("round trip differs:\n%s\nread back:\n%s", out, out2)
		}
	})
}
