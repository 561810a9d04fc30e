package config

import (
	"maps"
	"strings"
)

// IsReference reports whether an image name is an OCI reference
// (registry/repo:tag, repo@digest) rather than a catalog name, which has
// none of / : @ (issue 39).
func IsReference(name string) bool { return strings.ContainsAny(name, "/:@") }

// CatalogImages are the custom images the image store knows: custom_images,
// and each OCI reference image_allowlist names, under the reference itself.
// Listing a reference in image_allowlist is how an operator lets a
// template's FROM (or a create) use it without naming it (issue 39: 1).
func (c *Config) CatalogImages() map[string]string {
	out := maps.Clone(c.CustomImages)
	for _, name := range c.ImageAllowlist {
		if !IsReference(name) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		if _, ok := out[name]; !ok {
			out[name] = name
		}
	}
	return out
}
