package cli

// hutch catalog, and hutch image ls|pull|rm: the catalog and the daemon's
// image cache.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

func (a *app) catalogCmd() *cobra.Command {
	return listingCmd(a, &cobra.Command{
		Use:   "catalog",
		Short: "List the images sandboxes can be created from (sandbox::catalog::list)",
	}, api.FnCatalogList, (*client.Client).Catalog, func(w io.Writer, cat api.CatalogResponse) error {
		t := newTable(w, "NAME", "KIND", "SOURCE")
		for _, im := range cat.Images {
			t.row(im.Name, im.Kind, im.OCIRef)
		}
		if err := t.flush(); err != nil || len(cat.Runtimes) == 0 {
			return err
		}
		fmt.Fprintln(w)
		t = newTable(w, "RUNTIME", "MODE", "AVAILABLE", "ABILITIES")
		for _, rt := range cat.Runtimes {
			name, avail := rt.Name, "yes"
			if rt.Default {
				name += " (default)"
			}
			if !rt.Available {
				avail = "no: " + rt.Unavailable
			}
			t.row(name, rt.Mode, avail, rt.Abilities)
		}
		return t.flush()
	})
}

// listingCmd completes cmd as a command without arguments that fetches a
// listing from the daemon and prints it with table, or with --json as the
// response of function itself.
func listingCmd[T any](a *app, cmd *cobra.Command, function string, fetch func(*client.Client, context.Context) (T, error), table func(io.Writer, T) error) *cobra.Command {
	var asJSON bool
	cmd.Args = cobra.NoArgs
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the "+function+" response as JSON")
	cmd.RunE = action(func(cmd *cobra.Command, _ []string) error {
		resp, err := fetch(a.client(), cmd.Context())
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(a.stdout, resp)
		}
		return table(a.stdout, resp)
	})
	return cmd
}

func (a *app) imageCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Manage the daemon's image cache (ls, pull, rm)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(a.imageLsCmd(), a.imagePullCmd(), a.imageRmCmd())
	return cmd
}

func (a *app) imageLsCmd() *cobra.Command {
	return listingCmd(a, &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List catalog images with their cache state",
	}, api.FnImageList, (*client.Client).Images, func(w io.Writer, list api.ImageListResponse) error {
		return printImages(w, list.Images)
	})
}

func printImages(w io.Writer, images []api.ImageInfo) error {
	t := newTable(w, "NAME", "KIND", "STATE", "ALLOWED", "IN USE", "SIZE", "ID", "SOURCE")
	for _, im := range images {
		id, size := "-", "-"
		if im.ID != "" {
			id = im.ID[:min(12, len(im.ID))]
			size = formatSize(im.SizeBytes)
		}
		allowed := "no"
		if im.Allowed {
			allowed = "yes"
		}
		t.row(im.Name, im.Kind, im.State, allowed, strconv.Itoa(im.InUse), size, id, im.OCIRef)
	}
	return t.flush()
}

// formatSize renders bytes in one binary unit, as `docker images` does.
func formatSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fkB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

func (a *app) imagePullCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pull NAME",
		Short: "Pull (custom) or build (preset) a catalog image into the cache",
		Long: "Pull a catalog image into the daemon's cache, showing progress. A custom image's reference is\n" +
			"resolved again, so a tag that moved is pulled anew; a preset is built when it is missing.\n" +
			"With auto_install: false, this is how images get onto the host.",
		Args: cobra.ExactArgs(1),
	}
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		name, c, start := args[0], a.client(), time.Now()
		var st api.ImageStatus
		err := a.showingProgress(cmd.Context(), c, name, func() (err error) {
			st, err = c.PullImage(cmd.Context(), name)
			return err
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%s: %s %s (%s) in %.1fs\n", name, st.State, st.ID[:min(12, len(st.ID))],
			formatSize(st.SizeBytes), time.Since(start).Seconds())
		return nil
	})
	return cmd
}

func (a *app) imageRmCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"remove"},
		Short:   "Remove a catalog image from the cache (refused while a sandbox uses it)",
		Args:    cobra.ExactArgs(1),
	}
	cmd.RunE = action(func(cmd *cobra.Command, args []string) error {
		res, err := a.client().RemoveImage(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		if res.Removed {
			fmt.Fprintf(a.stdout, "%s: removed\n", res.Name)
		} else {
			fmt.Fprintf(a.stdout, "%s: not cached\n", res.Name)
		}
		return nil
	})
	return cmd
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
