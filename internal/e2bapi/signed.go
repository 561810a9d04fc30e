package e2bapi

// Signed file URLs: the SDK's downloadUrl and uploadUrl carry no token
// header but a signature of the file's path, the operation, the user and
// the sandbox's envdAccessToken (and an expiry):
//
//	signature = "v1_" + base64(SHA-256("path:read|write:user:token[:expiration]")), unpadded
//	signature_expiration = Unix seconds, optional
//
// A /files request of envd with a valid, unexpired signature acts for the
// token's owner, as one with the token itself. The URL names its sandbox
// by host ({49983}-{id}.{preview_domain}) or, under E2B_SANDBOX_URL, not
// at all: then the signature finds it among the running sandboxes of the
// owners this daemon admits.

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strconv"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/functions"
)

// maxSignatureBytes bounds a signature read from a URL.
const maxSignatureBytes = 128

// isSignedFiles reports whether r is a signed /files request.
func isSignedFiles(r *http.Request) bool {
	return r.URL.Path == "/files" && (r.Method == http.MethodGet || r.Method == http.MethodPost) && r.URL.Query().Has("signature")
}

// signedOwner is the admitted owner whose envd token of sandbox id signs
// r; an expired or wrong signature opens nothing.
func (tr *Transport) signedOwner(r *http.Request, id string) (string, error) {
	q := r.URL.Query()
	sig, exp := q.Get("signature"), q.Get("signature_expiration")
	if len(sig) > maxSignatureBytes {
		return "", errBadSignature
	}
	if exp != "" {
		until, err := strconv.ParseInt(exp, 10, 64)
		if err != nil || time.Now().Unix() > until {
			return "", fail(http.StatusUnauthorized, "signature is already expired") // envd's words
		}
	}
	op := "read"
	if r.Method == http.MethodPost {
		op = "write"
	}
	for _, owner := range tr.admittedOwners() {
		raw := q.Get("path") + ":" + op + ":" + q.Get("username") + ":" + tr.opts.Signer.Token(kindEnvd, owner, id)
		if exp != "" {
			raw += ":" + exp
		}
		sum := sha256.Sum256([]byte(raw))
		want := "v1_" + base64.RawStdEncoding.EncodeToString(sum[:])
		if subtle.ConstantTimeCompare([]byte(sig), []byte(want)) == 1 {
			return owner, nil
		}
	}
	return "", errBadSignature
}

var errBadSignature = fail(http.StatusUnauthorized, "the URL's signature is not one of this sandbox's envdAccessToken: sign it with downloadUrl or uploadUrl of this sandbox")

// admittedOwners are the owners who may use the E2B API (admitted).
func (tr *Transport) admittedOwners() []string {
	if !tr.opts.Keys.Enabled() {
		if tr.opts.Open {
			return []string{""}
		}
		return nil
	}
	return tr.opts.Keys.Owners()
}

// signedByURL serves a signed /files request that names no sandbox (the
// SDK under E2B_SANDBOX_URL): the sandbox whose token signs it, among the
// running sandboxes of the admitted owners.
func (tr *Transport) signedByURL(w http.ResponseWriter, r *http.Request) {
	for _, owner := range tr.admittedOwners() {
		ctx := auth.WithOwner(r.Context(), owner)
		res, err := functions.Call[api.ListResponse](ctx, tr.t, api.FnList, api.ListRequest{State: e2bStates["running"]})
		if err != nil {
			continue
		}
		for _, s := range res.Sandboxes {
			if o, err := tr.signedOwner(r, s.SandboxID); err == nil && o == owner {
				tr.servePort(w, r, s.SandboxID, EnvdPort)
				return
			}
		}
	}
	_, err := tr.signedOwner(r, "") // expired, or no sandbox's
	writeError(w, err)
}
