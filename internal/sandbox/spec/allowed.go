package spec

import (
	"slices"
	"strings"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Allowed checks that name is in catalog and in allowlist (S100, which
// lists the images that are in both).
func Allowed(name string, catalog, allowlist []string) error {
	if name == "" {
		return errdefs.Malformed("image is required (a catalog name such as python or node)")
	}
	allowed := make([]string, 0, len(allowlist))
	for _, n := range catalog {
		if slices.Contains(allowlist, n) {
			allowed = append(allowed, n)
		}
	}
	if slices.Contains(allowed, name) {
		return nil
	}
	list := strings.Join(allowed, ", ")
	if list == "" {
		list = "none (image_allowlist is empty)"
	}
	hint := ""
	if strings.ContainsAny(name, "/:@") {
		hint = " (image is a catalog name, not an OCI reference; register references under custom_images, or list the reference itself in image_allowlist)"
	}
	return errdefs.New(errdefs.CodeImageNotAllowed, "image %q is not allowed%s; allowed images: %s", Clip(name, 128), hint, list)
}

// WithFix is the hint of S242 for a command the sandbox's image lacks:
// the images with it (with) that the caller may create (allowlist).
func WithFix(with, allowlist []string, command string) string {
	var names []string
	for _, n := range with {
		if slices.Contains(allowlist, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "install " + command + " in the sandbox (no image this daemon allows has it)"
	}
	return "use an image with " + command + " (" + strings.Join(names, ", ") + "), or install it"
}
