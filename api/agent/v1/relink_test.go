package agentv1

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestSkipToRelink(t *testing.T) {
	junk := strings.Repeat("old session \xff hutch-agent relink\n", 5000)
	r, err := SkipToRelink(strings.NewReader(junk + string(RelinkMarker) + "new session"))
	if err != nil {
		t.Fatal(err)
	}
	if rest, _ := io.ReadAll(r); string(rest) != "new session" {
		t.Errorf("after the marker: %q", rest)
	}
	if _, err := SkipToRelink(strings.NewReader(junk)); !errors.Is(err, ErrNoRelink) {
		t.Errorf("without a marker: %v", err)
	}
	huge := io.MultiReader(bytes.NewReader(bytes.Repeat([]byte("x"), MaxRelinkJunk+1)), bytes.NewReader(RelinkMarker))
	if _, err := SkipToRelink(huge); !errors.Is(err, ErrNoRelink) {
		t.Errorf("past MaxRelinkJunk: %v", err)
	}
}
