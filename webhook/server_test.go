package webhook

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/driftguard/driftguard/certs"
	"github.com/driftguard/driftguard/test/wait"
)

// serve starts s on loopback and returns its address and a TLS client
// configuration that trusts its certificate.
func serve(t *testing.T, s *Server) (string, *tls.Config) {
	t.Helper()
	c, err := certs.NewStatic([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	s.Addr, s.Cert, s.ready = "127.0.0.1:0", c.Cert, make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	addr, err := s.BoundAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(c.CA)
	return addr.String(), &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}}
}

func reviewBody(t *testing.T) []byte {
	t.Helper()
	b, err := json.Marshal(admissionv1.AdmissionReview{Request: request(admissionv1.Update, "alice", "", strings.Replace(desiredDeployment, `"replicas":3`, `"replicas":9`, 1))})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawRequest sends the head of a POST to /validate declaring length bytes
// (chunked when length < 0) and then body, and returns the connection.
func rawRequest(t *testing.T, addr string, cfg *tls.Config, length int64, body []byte) *tls.Conn {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	head := "POST /validate HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\n"
	if length >= 0 {
		head += fmt.Sprintf("Content-Length: %d\r\n\r\n", length)
	} else {
		head += "Transfer-Encoding: chunked\r\n\r\n"
		if len(body) > 0 {
			body = append(fmt.Appendf(nil, "%x\r\n", len(body)), append(body, "\r\n"...)...)
		}
	}
	if _, err := conn.Write(append([]byte(head), body...)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// status reads the answer on conn; the test's deadline bounds the wait.
func status(t *testing.T, conn net.Conn) (int, string) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServerBoundsBodiesBeforeReading: a body above the limit, and bodies
// beyond the slots and bytes in flight, are refused without being read;
// within the limits the review is decided.
func TestServerBoundsBodiesBeforeReading(t *testing.T) {
	review := reviewBody(t)
	const limit = 64 << 10
	for _, tc := range []struct {
		name   string
		limits Limits
		// holders: requests that declare these lengths and send part of
		// their body, holding their slot and bytes while the server waits
		// for the rest.
		holders []int64
		// probe declares length and sends body (nil: nothing at all).
		length   int64
		body     []byte
		want     int
		wantText string
	}{
		{name: "within the limits the review is decided", limits: Limits{MaxRequestBytes: limit, MaxBytesInFlight: 2 * limit, MaxInFlight: 2},
			length: int64(len(review)), body: review, want: http.StatusOK, wantText: `"allowed":false`},
		{name: "a declared length above the limit is refused unread", limits: Limits{MaxRequestBytes: limit, MaxBytesInFlight: 2 * limit},
			length: limit + 1, want: http.StatusRequestEntityTooLarge, wantText: "--webhook-max-request-bytes"},
		{name: "15 MiB declared, nothing sent, is refused unread", limits: Limits{},
			length: 15 << 20, want: http.StatusRequestEntityTooLarge, wantText: "above the limit"},
		{name: "a chunked body is cut off at the limit", limits: Limits{MaxRequestBytes: limit, MaxBytesInFlight: 2 * limit},
			length: -1, body: bytes.Repeat([]byte(" "), limit+1), want: http.StatusRequestEntityTooLarge, wantText: "--webhook-max-request-bytes"},
		{name: "bodies beyond the bytes in flight wait unread, then are refused", limits: Limits{MaxRequestBytes: limit, MaxBytesInFlight: 2 * limit, Deadline: time.Second},
			holders: []int64{limit, limit}, length: 1024, want: http.StatusTooManyRequests, wantText: "--webhook-max-bytes-in-flight"},
		{name: "requests beyond the slots wait unread, then are refused", limits: Limits{MaxRequestBytes: limit, MaxInFlight: 2, Deadline: time.Second},
			holders: []int64{10, 10}, length: 1024, want: http.StatusTooManyRequests, wantText: "--webhook-max-in-flight"},
		{name: "a chunked body counts as the limit in flight", limits: Limits{MaxRequestBytes: limit, MaxBytesInFlight: limit, Deadline: time.Second},
			holders: []int64{-1}, length: 10, want: http.StatusTooManyRequests, wantText: "--webhook-max-bytes-in-flight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			v := newValidator(t, &buf)
			s := &Server{Validator: v, Limits: tc.limits, Log: logr.Discard()}
			addr, cfg := serve(t, s)
			for _, n := range tc.holders {
				rawRequest(t, addr, cfg, n, []byte("{"))
			}
			wait.Eventually(t, 5*time.Second, "the server holds every holder's slot and bytes", func() error {
				if got := len(s.gate.slots); got != len(tc.holders) {
					return fmt.Errorf("%d requests in flight, want the %d holders", got, len(tc.holders))
				}
				return nil
			})
			code, text := status(t, rawRequest(t, addr, cfg, tc.length, tc.body))
			if code != tc.want || !strings.Contains(text, tc.wantText) {
				t.Fatalf("status %d %q, want %d with %q", code, text, tc.want, tc.wantText)
			}
		})
	}
}

// TestServerRequiresClientCertificate: with ClientCAs set, a client without
// a certificate, with one another CA signed, or with one of a name not
// permitted is refused during the handshake; the API server's is served.
func TestServerRequiresClientCertificate(t *testing.T) {
	ca, caKey := testCA(t, "api-server-client-ca")
	other, otherKey := testCA(t, "someone-else")
	good := testClientCert(t, ca, caKey, "kube-apiserver-webhook-client")
	forged := testClientCert(t, other, otherKey, "kube-apiserver-webhook-client")
	misnamed := testClientCert(t, ca, caKey, "some-pod")
	review := reviewBody(t)
	for _, tc := range []struct {
		name    string
		names   []string
		cert    *tls.Certificate
		allowed bool
	}{
		{name: "no client certificate", cert: nil},
		{name: "a certificate another CA signed", cert: forged},
		{name: "the API server's certificate", cert: good, allowed: true},
		{name: "the API server's certificate, its name permitted", names: []string{"kube-apiserver-webhook-client"}, cert: good, allowed: true},
		{name: "a certificate of the CA with a name not permitted", names: []string{"kube-apiserver-webhook-client"}, cert: misnamed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			v := newValidator(t, &buf)
			pool := x509.NewCertPool()
			pool.AddCert(ca)
			s := &Server{Validator: v, ClientCAs: pool, ClientNames: tc.names, Log: logr.Discard()}
			addr, cfg := serve(t, s)
			if tc.cert != nil {
				cfg.Certificates = []tls.Certificate{*tc.cert}
			}
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 30 * time.Second}
			resp, err := client.Post("https://"+addr+ValidatePath, "application/json", bytes.NewReader(review))
			if !tc.allowed {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("served without a valid client certificate: %s", resp.Status)
				}
				if err := v.Audit.Flush(context.Background()); err != nil {
					t.Fatal(err)
				}
				if buf.Len() > 0 {
					t.Fatalf("a refused connection left a record: %s", buf.String())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %s", resp.Status)
			}
		})
	}
}

func testCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func testClientCert(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, name string) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestServerRefusalKeepsHTTP2Connection: the API server sends many reviews
// over one HTTP/2 connection; refusing one resets its stream only, and the
// next review goes over the same connection.
func TestServerRefusalKeepsHTTP2Connection(t *testing.T) {
	const limit = 64 << 10
	var buf bytes.Buffer
	s := &Server{Validator: newValidator(t, &buf), Limits: Limits{MaxRequestBytes: limit}, Log: logr.Discard()}
	addr, cfg := serve(t, s)
	cfg.NextProtos = []string{"h2"}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}, Timeout: 30 * time.Second}
	for i, tc := range []struct {
		body       []byte
		want       int
		wantReused bool
	}{
		{body: bytes.Repeat([]byte(" "), limit+1), want: http.StatusRequestEntityTooLarge},
		{body: reviewBody(t), want: http.StatusOK, wantReused: true},
	} {
		var reused bool
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused }})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+ValidatePath, bytes.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.ProtoMajor != 2 || resp.StatusCode != tc.want || reused != tc.wantReused {
			t.Fatalf("request %d: %s %s, connection reused %v; want %d, reused %v", i, resp.Proto, resp.Status, reused, tc.want, tc.wantReused)
		}
	}
}
