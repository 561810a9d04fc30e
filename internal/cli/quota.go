package cli

import (
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

// quotaCmd is `hutch quota` (issue 38): the caller's use against its
// limits.
func (a *app) quotaCmd() *cobra.Command {
	return listingCmd(a, &cobra.Command{Use: "quota", Short: "Show your use against your quota (sandboxes, cpus, memory, snapshots, templates, volumes, ports, jobs)"},
		api.FnQuota, (*client.Client).Quota, func(w io.Writer, q api.QuotaResponse) error {
			t := newTable(w, "LIMIT", "USED", "OF", "SET BY")
			for _, it := range q.Items {
				of := "-"
				if it.Limit > 0 {
					of = strconv.FormatUint(it.Limit, 10)
				}
				t.row(it.Name, strconv.FormatUint(it.Used, 10), of, it.Key)
			}
			return t.flush()
		})
}
