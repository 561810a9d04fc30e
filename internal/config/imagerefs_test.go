package config

import (
	"maps"
	"testing"
)

func TestCatalogImagesAddsAllowlistedReferences(t *testing.T) {
	c := &Config{CustomImages: map[string]string{"app": "example.com/app:1"},
		ImageAllowlist: []string{"python", "app", "registry.local:5000/base:2", "example.com/app:1"}}
	want := map[string]string{"app": "example.com/app:1", "registry.local:5000/base:2": "registry.local:5000/base:2", "example.com/app:1": "example.com/app:1"}
	if got := c.CatalogImages(); !maps.Equal(got, want) {
		t.Errorf("CatalogImages() = %v, want %v", got, want)
	}
	if len(c.CustomImages) != 1 {
		t.Errorf("CatalogImages changed custom_images: %v", c.CustomImages)
	}
	if got := (&Config{ImageAllowlist: []string{"python"}}).CatalogImages(); len(got) != 0 {
		t.Errorf("no references: %v", got)
	}
}
