package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// levelSettings is a block of settings for the tests.
type levelSettings struct {
	Level int `json:"level"`
}

func (s *levelSettings) Check() []error {
	if s.Level > 9 {
		return []error{fmt.Errorf("level must be at most 9, got %d", s.Level)}
	}
	return nil
}

func TestDecodeSettings(t *testing.T) {
	tests := []struct {
		raw     string
		want    int
		wantErr string
	}{
		{raw: "", want: 4},
		{raw: `{"level":7}`, want: 7},
		{raw: `{"level":10}`, wantErr: "runtimes.settings-test.level must be at most 9, got 10"},
		{raw: `{"levle":1}`, wantErr: `runtimes.settings-test: json: unknown field "levle"`},
	}
	for _, tt := range tests {
		s := &levelSettings{Level: 4}
		err := DecodeSettings("settings-test", json.RawMessage(tt.raw), s)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%s: err %v, want %q", tt.raw, err, tt.wantErr)
			}
			continue
		}
		if err != nil || s.Level != tt.want {
			t.Errorf("%s: level %d (%v), want %d", tt.raw, s.Level, err, tt.want)
		}
	}
}

func TestRegistrationSettings(t *testing.T) {
	never := func(Options) (Runtime, error) { return nil, errors.New("never started") }
	Register(Registration{Name: "settings-test", New: never, Settings: func() Settings { return &levelSettings{Level: 4} }})
	Register(Registration{Name: "settings-test-bare", New: never})
	a, ok := NewSettings("settings-test")
	b, _ := NewSettings("settings-test")
	if !ok || a.(*levelSettings).Level != 4 || a == b {
		t.Errorf("NewSettings: %+v %v; each call must give a new value of the defaults", a, ok)
	}
	if s, ok := NewSettings("settings-test-bare"); s != nil || !ok {
		t.Errorf("a runtime without a block: %v, %v", s, ok)
	}
	if s, ok := NewSettings("settings-test-none"); s != nil || ok {
		t.Errorf("a runtime not registered: %v, %v", s, ok)
	}
	names := strings.Join(NamesWithSettings(), ",")
	if !strings.Contains(names, "settings-test") || strings.Contains(names, "settings-test-bare") {
		t.Errorf("NamesWithSettings = %s", names)
	}
}
