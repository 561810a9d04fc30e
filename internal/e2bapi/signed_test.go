package e2bapi

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// sign is the SDK's signature of a /files URL (its getSignature).
func sign(path, op, user, token, exp string) string {
	raw := path + ":" + op + ":" + user + ":" + token
	if exp != "" {
		raw += ":" + exp
	}
	sum := sha256.Sum256([]byte(raw))
	return "v1_" + base64.StdEncoding.EncodeToString(sum[:])[:43]
}

// TestSignedOwner: the signature of the owner's envd token opens the
// file for its operation until its expiry, and nothing else does.
func TestSignedOwner(t *testing.T) {
	tr := &Transport{opts: keyed(Options{Signer: testSigner(t)})}
	const id = "0b7c3c39-6a7c-4f39-9d7e-1f0d1c6e3f00"
	token := tr.opts.Signer.Token(kindEnvd, "alice", id)
	later := strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10)
	past := strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10)
	for _, tc := range []struct {
		name, method, sig, exp string
		ok                     bool
	}{
		{"read", "GET", sign("a.txt", "read", "", token, ""), "", true},
		{"write", "POST", sign("a.txt", "write", "", token, ""), "", true},
		{"write signed as read", "POST", sign("a.txt", "read", "", token, ""), "", false},
		{"unexpired", "GET", sign("a.txt", "read", "", token, later), later, true},
		{"expired", "GET", sign("a.txt", "read", "", token, past), past, false},
		{"other sandbox", "GET", sign("a.txt", "read", "", tr.opts.Signer.Token(kindEnvd, "alice", "x"), ""), "", false},
		{"other path", "GET", sign("b.txt", "read", "", token, ""), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := url.Values{"path": {"a.txt"}, "signature": {tc.sig}}
			if tc.exp != "" {
				q.Set("signature_expiration", tc.exp)
			}
			r := httptest.NewRequest(tc.method, "/files?"+q.Encode(), nil)
			if !isSignedFiles(r) {
				t.Fatal("not a signed /files request")
			}
			owner, err := tr.signedOwner(r, id)
			if ok := err == nil && owner == "alice"; ok != tc.ok {
				t.Errorf("owner %q, err %v; want ok %v", owner, err, tc.ok)
			}
		})
	}
}
