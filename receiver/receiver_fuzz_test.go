package receiver

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/source"
)

// FuzzReceiver POSTs a push payload to the push receiver with the
// fuzzer's token header, signature header and delivery ID (sign true
// replaces the signature by a valid one). It must trigger a reconcile only
// for a push that carries the token or a valid signature, with exactly the
// URLs the payload names, answer a refused push 401 and never trigger
// twice for one signed or identified delivery; the URLs it passes on are
// each the same repository as themselves, and sameness is symmetric.
func FuzzReceiver(f *testing.F) {
	const token = "s3cret-push-token"
	github := `{"ref":"refs/heads/main","after":"0123abc","repository":{"clone_url":"https://git.example/org/infra.git","html_url":"https://git.example/org/infra","ssh_url":"git@git.example:org/infra.git"}}`
	gitlab := `{"object_kind":"push","project":{"git_http_url":"https://gl.example/a/b.git","git_ssh_url":"git@gl.example:a/b.git","web_url":"https://gl.example/a/b"}}`
	f.Add([]byte(github), uint8(0), token, "", "", false)
	f.Add([]byte(github), uint8(1), "", "sha256=00", "72d4f4a2-0000-11ef-8f6e-1d3c1b0e6a11", true)
	f.Add([]byte(gitlab), uint8(2), token, "", "7b1e0f8a-uuid", false)
	f.Add([]byte(gitlab), uint8(3), "", "", "", true)
	f.Add([]byte(`{"url":"http://127.0.0.1:4000/shop.git"}`), uint8(4), "", "", "", true)
	f.Add([]byte(`{"url":""}`), uint8(0), token, "", "", false)
	f.Add([]byte(`{"url":"a","url":"b","repository":[]}`), uint8(1), token+" ", "sha256=", "", false)
	f.Add([]byte(`not json`), uint8(2), "", "SHA256=zz", "", false)
	f.Add([]byte(github), uint8(5), token[:5], "", "", false)
	f.Fuzz(func(t *testing.T, body []byte, which uint8, tokenValue, signature, delivery string, sign bool) {
		var pushed [][]string
		rc := NewReceiver(token, func(urls []string) { pushed = append(pushed, urls) }, logr.Discard())
		h := http.Header{}
		tokenHeader := tokenHeaders[int(which)%len(tokenHeaders)]
		sigHeader := signatureHeaders[int(which)%len(signatureHeaders)]
		if tokenValue != "" {
			h.Set(tokenHeader, tokenValue)
		}
		if sign {
			m := hmac.New(sha256.New, []byte(token))
			m.Write(body)
			signature = sigHeader.prefix + hex.EncodeToString(m.Sum(nil))
		}
		if signature != "" {
			h.Set(sigHeader.name, signature)
		}
		if delivery != "" {
			h.Set(deliveryHeaders[int(which)%len(deliveryHeaders)], delivery)
		}
		post := func() int {
			r := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
			r.Header = h.Clone()
			w := httptest.NewRecorder()
			rc.ServeHTTP(w, r)
			return w.Code
		}

		code := post()
		byToken := h.Get(tokenHeader) == token
		bySignature := sign && h.Get(sigHeader.name) == signature
		authentic := byToken || bySignature
		urls, urlsErr := PushURLs(body)
		switch {
		case code == http.StatusUnauthorized:
			if authentic {
				t.Fatalf("push with the token or a valid signature refused (token %v, signature %v)", byToken, bySignature)
			}
		case !authentic:
			// A wrong token and a forged signature must never pass:
			// the fuzzer does not know the token.
			t.Fatalf("push without the token answered %d", code)
		case code == http.StatusAccepted:
			if urlsErr != nil || len(urls) == 0 || len(pushed) != 1 || !slices.Equal(pushed[0], urls) {
				t.Fatalf("accepted: pushed %q, payload names %q (%v)", pushed, urls, urlsErr)
			}
		case code == http.StatusBadRequest:
			if urlsErr == nil && len(urls) > 0 {
				t.Fatalf("payload naming %q refused", urls)
			}
		default:
			t.Fatalf("answered %d", code)
		}
		if code != http.StatusAccepted && len(pushed) > 0 {
			t.Fatalf("answered %d but triggered %q", code, pushed)
		}

		// The same delivery again: a signed or identified one is
		// recognised and triggers nothing.
		if code == http.StatusAccepted {
			again := post()
			// A push that carries the token is authenticated by it,
			// not by a signature it may carry as well.
			identified := (bySignature && !byToken) || len(deliveryKeys(h, nil)) > 0
			switch {
			case identified && (again != http.StatusOK || len(pushed) != 1):
				t.Fatalf("replayed delivery answered %d, triggered %d times", again, len(pushed))
			case !identified && (again != http.StatusAccepted || len(pushed) != 2):
				t.Fatalf("unidentified second push answered %d, triggered %d times", again, len(pushed))
			}
		}

		for _, a := range urls {
			if !source.SameRepository(a, a) {
				t.Fatalf("%q is not the same repository as itself", a)
			}
			for _, b := range urls {
				if source.SameRepository(a, b) != source.SameRepository(b, a) {
					t.Fatalf("SameRepository(%q, %q) is not symmetric", a, b)
				}
			}
		}
	})
}
