package config

import (
	"strings"
	"testing"
)

func TestImageKeys(t *testing.T) {
	tests := []struct {
		name, yaml, wantErr string
	}{
		{"caps of a custom image", "custom_images: {app: \"ghcr.io/acme/app:1\"}\nper_image_caps: {app: {max_cpus: 1}}\n", ""},
		{"caps of a preset", "per_image_caps: {node: {max_memory_mb: 256}}\n", ""},
		{"caps of an unknown image", "per_image_caps: {pyhton: {max_cpus: 1}}\n", "per_image_caps.pyhton names no catalog image"},
		{"shadowing inside the worker block", "workers:\n- name: iii-sandbox\n  config:\n    custom_images: {node: \"x.io/node:1\"}\n", `custom_images key "node" shadows`},
		{"custom image of the wrong type", "custom_images: {app: [1, 2]}\n", "line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if tt.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
