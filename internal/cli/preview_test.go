package cli

import (
	"reflect"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
)

func TestPreviewFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want *api.PreviewOptions
	}{
		{nil, nil},
		{[]string{"--preview-host-header", "app.test:${PORT}", "--preview-private"}, &api.PreviewOptions{HostHeader: "app.test:${PORT}", Private: true}},
		{[]string{"--preview-private"}, &api.PreviewOptions{Private: true}},
	} {
		var f sandboxFlags
		cmd := &cobra.Command{}
		f.register(cmd)
		if err := cmd.ParseFlags(c.args); err != nil {
			t.Fatal(err)
		}
		if got := f.request("python").Preview; !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v: %+v, want %+v", c.args, got, c.want)
		}
	}
}
