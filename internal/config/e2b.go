package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
)

// E2B is the block of the E2B-compatible API (internal/e2bapi).
type E2B struct {
	// APIKeys maps owners to the keys E2B's SDKs send as X-API-KEY
	// (E2B_API_KEY). An owner may also be an owner of api_tokens: both
	// then reach the same sandboxes. Without api_keys and without
	// api_tokens every E2B caller acts for the one local user; with
	// api_tokens but no api_keys the E2B API refuses every call.
	APIKeys map[string]string `yaml:"api_keys"`
	// Templates maps E2B template ids to catalog images; a template id
	// it does not name must itself be a catalog image or a template.
	Templates map[string]string `yaml:"templates"`
}

// e2bKey is the form of an E2B API key: E2B's Python SDK checks
// ^e2b_[0-9a-f]+$; hutch asks for at least 128 bits of hex.
var e2bKey = regexp.MustCompile(`^e2b_[0-9a-f]{32,}$`)

// E2BKeyForm says what an E2B key looks like, for error messages.
const E2BKeyForm = "e2b_ and at least 32 lower-case hex digits (e.g. e2b_$(openssl rand -hex 20))"

// IsE2BKey reports whether key has the form of e2b.api_keys' keys.
func IsE2BKey(key string) bool { return e2bKey.MatchString(key) }

// defaultE2B is the E2B block's default: E2B's base template is the
// e2b-base preset, made as E2B's (a user "user", sudo, curl, git, pip);
// so is its code interpreter's (python3 is all the kernel needs).
func defaultE2B() E2B {
	return E2B{Templates: map[string]string{"base": "e2b-base", "code-interpreter-v1": "e2b-base"}}
}

// validateE2B checks the e2b block.
func (c *Config) validateE2B() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for owner, key := range c.E2B.APIKeys {
		if !IsE2BKey(key) {
			bad("e2b.api_keys.%s: an E2B key is %s, as E2B's SDKs expect", owner, E2BKeyForm)
		}
		if slices.Contains(slices.Collect(maps.Values(c.APITokens)), key) {
			bad("e2b.api_keys.%s: the key is also a token of api_tokens; give each its own", owner)
		}
	}
	for id, image := range c.E2B.Templates {
		if id == "" {
			bad("e2b.templates has an empty template id")
		}
		if !c.inCatalog(image) {
			bad("e2b.templates.%s %s", id, notInCatalog)
		}
	}
	return errs
}
