package cli

// issue 40: a volume's files from the command line, without a sandbox
// (sandbox::volume::fs::*).

import (
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
)

// volumeFilesCmds are `hutch volume files|cat|put`.
func (a *app) volumeFilesCmds() []*cobra.Command {
	var depth int
	files := &cobra.Command{Use: "files NAME [PATH]", Short: "List a directory of a volume without a sandbox (/ is the volume's root)", Args: cobra.RangeArgs(1, 2)}
	files.Flags().IntVar(&depth, "depth", 1, "levels below PATH to list (1 to 10)")
	files.RunE = action(func(cmd *cobra.Command, args []string) error {
		req := api.VolumeFsListRequest{Name: args[0], Path: "/", Depth: depth}
		if len(args) == 2 {
			req.Path = args[1]
		}
		var res api.VolumeFsListResponse
		if err := a.client().Call(cmd.Context(), api.FnVolumeFsList, req, &res); err != nil {
			return err
		}
		t := newTable(a.stdout, "PATH", "TYPE", "SIZE", "MODE", "UID", "GID", "MODIFIED")
		for _, e := range res.Entries {
			t.row(e.Path, e.Type, strconv.FormatInt(e.Size, 10), fmt.Sprintf("%04o", e.Mode), strconv.FormatUint(uint64(e.UID), 10), strconv.FormatUint(uint64(e.GID), 10), e.Mtime)
		}
		return t.flush()
	})
	cat := &cobra.Command{Use: "cat NAME PATH", Short: "Print a file of a volume (at most 16 MiB) without a sandbox", Args: cobra.ExactArgs(2)}
	cat.RunE = action(func(cmd *cobra.Command, args []string) error {
		var res api.VolumeFsReadResponse
		if err := a.client().Call(cmd.Context(), api.FnVolumeFsRead, api.VolumeFsRequest{Name: args[0], Path: args[1]}, &res); err != nil {
			return err
		}
		data, err := base64.StdEncoding.DecodeString(res.ContentB64)
		if err != nil {
			return err
		}
		_, err = a.stdout.Write(data)
		return err
	})
	var force bool
	put := &cobra.Command{Use: "put NAME PATH [FILE|-]", Short: "Write a file of a volume (at most 16 MiB) from FILE or stdin without a sandbox", Args: cobra.RangeArgs(2, 3)}
	put.Flags().BoolVar(&force, "force", false, "replace an existing file")
	put.RunE = action(func(cmd *cobra.Command, args []string) error {
		src := a.stdin
		if len(args) == 3 && args[2] != "-" {
			f, err := os.Open(args[2])
			if err != nil {
				return err
			}
			defer f.Close()
			src = f
		}
		data, err := io.ReadAll(io.LimitReader(src, api.MaxVolumeReadBytes+1))
		if err != nil {
			return err
		}
		if len(data) > api.MaxVolumeReadBytes {
			return fmt.Errorf("the content is larger than %d bytes", api.MaxVolumeReadBytes)
		}
		b64 := base64.StdEncoding.EncodeToString(data)
		var e api.VolumeEntry
		if err := a.client().Call(cmd.Context(), api.FnVolumeFsWrite, api.VolumeFsWriteRequest{Name: args[0], Path: args[1], ContentB64: &b64, Force: force}, &e); err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, e.Path)
		return nil
	})
	return []*cobra.Command{files, cat, put}
}
