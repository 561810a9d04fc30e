package auth

import (
	"encoding/base64"
	"net/http"
	"strings"
)

// BearerProtocolPrefix starts the WebSocket subprotocol that carries a
// bearer token: "hutch.bearer.<base64url of the token, no padding>". A
// browser's WebSocket cannot set an Authorization header, only the
// subprotocols it offers (Sec-WebSocket-Protocol), so the console offers its
// token that way beside the protocol it speaks; it never goes into the URL,
// where logs and histories would keep it. Kubernetes' API server takes
// tokens the same way.
const BearerProtocolPrefix = "hutch.bearer."

// BearerProtocol is the subprotocol carrying tok.
func BearerProtocol(tok string) string {
	return BearerProtocolPrefix + base64.RawURLEncoding.EncodeToString([]byte(tok))
}

// protocolToken returns the token of r's bearer subprotocol when r is a
// WebSocket upgrade that offers one.
func protocolToken(r *http.Request) (string, bool) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return "", false
	}
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(h, ",") {
			enc, ok := strings.CutPrefix(strings.TrimSpace(p), BearerProtocolPrefix)
			if !ok {
				continue
			}
			tok, err := base64.RawURLEncoding.DecodeString(enc)
			if err != nil || len(tok) == 0 {
				return "", false
			}
			return string(tok), true
		}
	}
	return "", false
}

// DropBearerProtocol removes every bearer subprotocol from h's
// Sec-WebSocket-Protocol, for a request passed on to a sandbox's server,
// which must never see the owner's token.
func DropBearerProtocol(h http.Header) {
	vals := h.Values("Sec-WebSocket-Protocol")
	if len(vals) == 0 {
		return
	}
	var keep []string
	for _, v := range vals {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" && !strings.HasPrefix(p, BearerProtocolPrefix) {
				keep = append(keep, p)
			}
		}
	}
	h.Del("Sec-WebSocket-Protocol")
	if len(keep) > 0 {
		h.Set("Sec-WebSocket-Protocol", strings.Join(keep, ", "))
	}
}
