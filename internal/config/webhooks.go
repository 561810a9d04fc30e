package config

import (
	"fmt"
	"net/url"
	"path"
)

// Webhook is one endpoint that is sent events (webhooks).
type Webhook struct {
	// URL receives each event as a POST of JSON (http or https).
	URL string `yaml:"url"`
	// Events are the event types, or patterns ("sandbox.*", "*"), it
	// receives.
	Events []string `yaml:"events"`
	// Secret signs each delivery (HMAC-SHA256, Hutch-Signature).
	Secret string `yaml:"secret"`
}

// maxWebhooks bounds the webhooks block.
const maxWebhooks = 32

// validateWebhooks checks the webhooks block.
func (c *Config) validateWebhooks() []error {
	var errs []error
	if len(c.Webhooks) > maxWebhooks {
		errs = append(errs, fmt.Errorf("webhooks has %d entries; at most %d", len(c.Webhooks), maxWebhooks))
	}
	for i, h := range c.Webhooks {
		for _, err := range h.Check() {
			errs = append(errs, fmt.Errorf("webhooks[%d].%w", i, err))
		}
	}
	return errs
}

// Check checks one webhook, whether configured or added at run time; each
// error begins with the field it is about.
func (h Webhook) Check() []error {
	var errs []error
	u, err := url.Parse(h.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("url %q must be an http or https URL", h.URL))
	}
	if len(h.Events) == 0 || len(h.Events) > 64 {
		errs = append(errs, fmt.Errorf("events must name 1 to 64 event types or patterns it receives (\"*\" for all)"))
	}
	for _, p := range h.Events {
		if _, err := path.Match(p, ""); err != nil || len(p) > 128 {
			errs = append(errs, fmt.Errorf("events: %q is not a pattern", p))
		}
	}
	if len(h.Secret) < 16 || len(h.Secret) > 1024 {
		errs = append(errs, fmt.Errorf("secret must be 16 to 1024 characters"))
	}
	return errs
}
