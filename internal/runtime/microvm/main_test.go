package microvm

import (
	"os"
	"testing"

	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestMain removes the binaries the tests built once they end.
func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }
