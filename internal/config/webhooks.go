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
		u, err := url.Parse(h.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("webhooks[%d].url %q must be an http or https URL", i, h.URL))
		}
		if len(h.Events) == 0 {
			errs = append(errs, fmt.Errorf("webhooks[%d].events is empty: name the event types it receives (\"*\" for all)", i))
		}
		for _, p := range h.Events {
			if _, err := path.Match(p, ""); err != nil {
				errs = append(errs, fmt.Errorf("webhooks[%d].events: %q is not a pattern", i, p))
			}
		}
		if len(h.Secret) < 16 {
			errs = append(errs, fmt.Errorf("webhooks[%d].secret must be at least 16 characters", i))
		}
	}
	return errs
}
