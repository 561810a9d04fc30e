package cli

import (
	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
)

// previewFlags registers a create's preview terms (issue 37) on cmd.
func previewFlags(cmd *cobra.Command, o *api.PreviewOptions) {
	fl := cmd.Flags()
	fl.StringVar(&o.HostHeader, "preview-host-header", "", "the Host header the sandbox's servers see on preview requests; ${PORT} is the port reached (app.example.com:${PORT})")
	fl.BoolVar(&o.Private, "preview-private", false, "its ports may never be made public: reached with your token only")
}

// previewOf is o for a create request: nil for the defaults.
func previewOf(o api.PreviewOptions) *api.PreviewOptions {
	if o == (api.PreviewOptions{}) {
		return nil
	}
	return &o
}
