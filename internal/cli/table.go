package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hutch-dev/hutch/internal/safetext"
)

// table prints aligned columns, as the listings (list, catalog, image ls)
// do. Every cell is escaped: names, refs and stop reasons can carry bytes a
// sandbox or an image chose, and a terminal must never interpret them.
type table struct {
	tw *tabwriter.Writer
}

// newTable starts a table on w with its header row.
func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)}
	t.row(header...)
	return t
}

// row adds one row of cells.
func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = safetext.Escape(c)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

// flush writes the table out.
func (t *table) flush() error { return t.tw.Flush() }
