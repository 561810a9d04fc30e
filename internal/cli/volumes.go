package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

// volumeCmd is `hutch volume`: the caller's named volumes.
func (a *app) volumeCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "volume", Short: "Named volumes: file systems of a fixed size that outlive sandboxes (create, ls, get, rm)", Args: cobra.NoArgs}
	var sizeMB uint64
	create := &cobra.Command{Use: "create NAME", Short: "Create a volume; mount it with `hutch create|run --volume NAME:PATH[:ro]`", Args: cobra.ExactArgs(1)}
	create.Flags().Var(mibFlag[uint64]{&sizeMB}, "size", "size: 512m, 10g (a bare number is MiB); writes past it fail with ENOSPC (daemon default when omitted)")
	create.RunE = action(func(cmd *cobra.Command, args []string) error {
		info, err := a.client().CreateVolume(cmd.Context(), args[0], sizeMB)
		if err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, info.Name)
		return nil
	})
	ls := listingCmd(a, &cobra.Command{Use: "ls", Aliases: []string{"list"}, Short: "List your volumes"},
		api.FnVolumeList, (*client.Client).ListVolumes, func(w io.Writer, list api.VolumeListResponse) error {
			t := newTable(w, "VOLUME", "SIZE", "CREATED", "MOUNTED BY")
			for _, v := range list.Volumes {
				t.row(v.Name, strconv.FormatUint(v.SizeMB, 10)+"MB", v.CreatedAt, tagOrDash(strings.Join(v.SandboxIDs, ",")))
			}
			return t.flush()
		})
	get := &cobra.Command{Use: "get NAME", Short: "Describe a volume as JSON: size, bytes used and available, the sandboxes that mount it", Args: cobra.ExactArgs(1)}
	get.RunE = action(func(cmd *cobra.Command, args []string) error {
		info, err := a.client().GetVolume(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return printJSON(a.stdout, info)
	})
	rm := &cobra.Command{Use: "rm NAME...", Short: "Delete volumes and their data (refused while a live sandbox mounts one)", Args: cobra.MinimumNArgs(1)}
	rm.RunE = action(func(cmd *cobra.Command, args []string) error {
		for _, name := range args {
			if _, err := a.client().DeleteVolume(cmd.Context(), name); err != nil {
				return err
			}
		}
		return nil
	})
	cmd.AddCommand(create, ls, get, rm)
	cmd.AddCommand(a.volumeFilesCmds()...) // issue 40: files, cat, put
	return cmd
}

// volumeFlags is the --volume flag of create and run.
type volumeFlags []string

func (f *volumeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar((*[]string)(f), "volume", nil, "mount your volume NAME at PATH, read-only with :ro (NAME:PATH[:ro], repeatable)")
}

// apply sets req's volumes from the flags.
func (f volumeFlags) apply(req *api.CreateRequest) error {
	for _, s := range f {
		m, err := parseVolumeFlag(s)
		if err != nil {
			return err
		}
		req.Volumes = append(req.Volumes, m)
	}
	return nil
}

// parseVolumeFlag reads NAME:PATH[:ro|:rw].
func parseVolumeFlag(s string) (api.VolumeMount, error) {
	name, p, ok := strings.Cut(s, ":")
	if !ok || name == "" || p == "" {
		return api.VolumeMount{}, usagef("--volume %q: want NAME:PATH[:ro]", s)
	}
	var m api.VolumeMount
	if rest, ok := strings.CutSuffix(p, ":ro"); ok {
		p, m.ReadOnly = rest, true
	} else if rest, ok := strings.CutSuffix(p, ":rw"); ok {
		p = rest
	}
	m.Name, m.Path = name, p
	return m, nil
}
