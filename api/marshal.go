package api

import (
	"bytes"
	"encoding/json"
)

// Marshal encodes a payload as every transport writes it: one line of
// JSON without HTML escaping (a sandbox's "<" stays "<").
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
