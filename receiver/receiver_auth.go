package receiver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
)

// tokenHeaders carry the token itself.
var tokenHeaders = []string{"X-Driftguard-Token", "X-Gitlab-Token"}

// signatureHeaders carry the hex HMAC-SHA256 of the body keyed with the
// token, after a prefix.
var signatureHeaders = []struct{ name, prefix string }{
	{"X-Hub-Signature-256", "sha256="}, // GitHub, and Gitea since 1.17
	{"X-Gitea-Signature", ""},
	{"X-Gogs-Signature", ""},
}

// authenticated is the outcome of checking a push against the token.
type authenticated struct {
	// refused says why the push is refused; empty when it is not.
	refused string
	// signature is the verified HMAC of the body, when the push was
	// authenticated by a signature rather than the token itself.
	signature []byte
}

// authenticate checks that a push carries token, or a valid signature of
// body keyed with it. Every comparison takes the same time whatever the
// values: a token header is compared as SHA-256 digests (so not even its
// length shows), a signature with hmac.Equal.
func authenticate(token string, h http.Header, body []byte) authenticated {
	why := "no token or signature header"
	want := sha256.Sum256([]byte(token))
	for _, name := range tokenHeaders {
		v := h.Get(name)
		if v == "" {
			continue
		}
		got := sha256.Sum256([]byte(v))
		if hmac.Equal(got[:], want[:]) {
			return authenticated{}
		}
		why = "wrong " + name
	}
	var mac []byte
	for _, sh := range signatureHeaders {
		v := h.Get(sh.name)
		if v == "" {
			continue
		}
		if mac == nil {
			m := hmac.New(sha256.New, []byte(token))
			m.Write(body)
			mac = m.Sum(nil)
		}
		hexSig, ok := strings.CutPrefix(v, sh.prefix)
		sig, err := hex.DecodeString(hexSig)
		if ok && err == nil && hmac.Equal(sig, mac) {
			return authenticated{signature: mac}
		}
		why = "wrong " + sh.name
	}
	return authenticated{refused: why}
}
