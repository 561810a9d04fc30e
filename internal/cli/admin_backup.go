package cli

// issue 41: 5, `hutch admin backup` and `hutch admin restore`.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hutch-dev/hutch/internal/backup"
	"github.com/hutch-dev/hutch/internal/volumes"
)

func (a *app) adminBackupCmd() *cobra.Command {
	var volumes bool
	cmd := &cobra.Command{
		Use:   "backup FILE",
		Short: "Write an archive of the running daemon's state to FILE",
		Long: `Write a consistent archive of the running daemon's state to FILE (a
gzipped tar): its metadata store (sandboxes, snapshots, templates), the
snapshots' checkpoints and template layers, the volumes' records and the
data dir's format. --volumes adds the volumes' data (a volume in use is
copied as it is on disk at that moment). FILE appears only when the
archive is whole. An operator's call (admin_owners, or the local socket).`,
		Args: cobra.ExactArgs(1),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			file := args[0]
			tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".tmp-")
			if err != nil {
				return err
			}
			defer os.Remove(tmp.Name())
			err = a.client().AdminBackup(cmd.Context(), tmp, volumes)
			if err = errors.Join(err, tmp.Close()); err != nil {
				return err
			}
			if err := os.Rename(tmp.Name(), file); err != nil {
				return err
			}
			fi, err := os.Stat(file)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "backup written to %s (%d bytes)\n", file, fi.Size())
			return nil
		}),
	}
	cmd.Flags().BoolVar(&volumes, "volumes", false, "include the volumes' data")
	return cmd
}

func (a *app) adminRestoreCmd() *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "restore FILE --data-dir DIR",
		Short: "Unpack a backup into a new, empty data dir",
		Long: `Unpack the archive FILE (hutch admin backup) into DIR, which must be
missing or empty; then start hutch serve --data-dir DIR. Every snapshot,
template and volume comes back; sandboxes that ran at backup time come back
stopped. An archive of a newer data dir format, or a truncated one, is
refused and nothing is left in DIR. Volumes of a backup made without
--volumes come back empty.`,
		Args: cobra.ExactArgs(1),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if dataDir == "" {
				return errors.New("--data-dir is required: the new, empty data dir to restore into")
			}
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			sum, err := backup.Restore(f, dataDir)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "restored into %s: %d snapshots, %d templates, %d volumes\n", dataDir, sum.Snapshots, sum.Templates, sum.Volumes)
			if sum.Stopped > 0 {
				fmt.Fprintf(a.stdout, "%d sandboxes that were running at backup time come back stopped\n", sum.Stopped)
			}
			var empty []string
			for _, v := range sum.VolumesWithoutData {
				if err := os.MkdirAll(filepath.Dir(v.DiskPath), 0o700); err != nil {
					return err
				}
				if err := volumes.MakeEmptyDisk(v.DiskPath, v.SizeMB); err != nil {
					return fmt.Errorf("making volume %s anew: %w", v.Name, err)
				}
				empty = append(empty, v.Name)
			}
			if len(empty) > 0 {
				fmt.Fprintf(a.stdout, "volumes restored empty (the backup was made without --volumes): %s\n", strings.Join(empty, ", "))
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "the new, empty data dir to restore into")
	return cmd
}
