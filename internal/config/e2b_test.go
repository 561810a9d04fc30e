package config

import (
	"strings"
	"testing"
)

func TestE2B(t *testing.T) {
	const key = "e2b_00112233445566778899aabbccddeeff00"
	for _, tc := range []struct {
		name, yaml, wantErr string
	}{
		{"defaults", "", ""},
		{"keys", "e2b: {api_keys: {alice: " + key + "}}", ""},
		{"not an E2B key", "e2b: {api_keys: {alice: abcdefabcdefabcdefabcdefabcdef00}}", "e2b.api_keys.alice: an E2B key"},
		{"upper case", "e2b: {api_keys: {alice: E2B_00112233445566778899AABBCCDDEEFF00}}", "e2b.api_keys.alice"},
		{"too short", "e2b: {api_keys: {alice: e2b_0011}}", "at least 32"},
		{"shared with api_tokens", "api_tokens: {alice: " + key + "}\ne2b: {api_keys: {alice: " + key + "}}", "also a token of api_tokens"},
		{"template", "e2b: {templates: {mine: node}}", ""},
		{"template of no image", "e2b: {templates: {mine: nothing}}", "e2b.templates.mine names no catalog image"},
		{"unknown key", "e2b: {keys: {}}", `unknown key "e2b.keys"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.yaml))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if cfg.E2B.Templates["base"] != "e2b-base" && !strings.Contains(tc.yaml, "templates") {
					t.Fatalf("templates %v", cfg.E2B.Templates)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestE2BKeysRedacted(t *testing.T) {
	const key = "e2b_00112233445566778899aabbccddeeff00"
	cfg, err := Parse([]byte("e2b: {api_keys: {alice: " + key + "}}"))
	if err != nil {
		t.Fatal(err)
	}
	if out := string(cfg.Marshal()); strings.Contains(out, key) || !strings.Contains(out, "alice") {
		t.Fatalf("dump:\n%s", out)
	}
}
