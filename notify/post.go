package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/driftguard/driftguard/redact"
)

// post sends n to the address of the sink's provider in its shape and
// returns the address's host, for the log. The URL of a Slack or Teams
// webhook is itself a secret, so neither the error nor the host holds its
// path, query or user: an error of the HTTP client (which names the whole
// URL) is reduced to its cause.
func (s *Sink) post(ctx context.Context, c Config, n Notification) (host string, err error) {
	if c.Address == "" {
		return "", nil
	}
	host = hostOf(c.Address)
	var body []byte
	switch c.Provider {
	case Slack:
		body, err = slackBody(n)
	case Teams:
		body, err = teamsBody(n)
	default:
		body, err = json.Marshal(n)
	}
	if err != nil {
		return host, err
	}
	// The record was scrubbed by audit.Logger; a notification built from
	// anything else is scrubbed here, as it leaves (and before it is
	// signed, so that the signature covers what is sent).
	body = redact.Secrets.Bytes(body)
	header := http.Header{}
	header.Set("Content-Type", "application/json")
	if c.Provider == Generic && c.HMACKey != "" {
		header.Set(SignatureHeader, Sign([]byte(c.HMACKey), body))
	}
	return host, s.send(ctx, http.MethodPost, c.Address, body, header)
}

// send makes one request and reads the answer. Its errors never quote the
// URL.
func (s *Sink) send(ctx context.Context, method, target string, body []byte, header http.Header) error {
	host := hostOf(target)
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("notification request to %s: %w", host, withoutURL(err))
	}
	for k, v := range header {
		req.Header[k] = v
	}
	c := s.Client
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("post notification to %s: %w", host, withoutURL(err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post notification to %s: the receiver answered %s", host, resp.Status)
	}
	return nil
}

// hostOf returns the host[:port] of a notification URL, or a placeholder
// when it does not parse (the parse error would quote it whole).
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(unparsable URL)"
	}
	return u.Host
}

// withoutURL strips the *url.Error wrappers (which quote the whole URL,
// also of a redirect) from an HTTP client or URL parse error, keeping the
// cause.
func withoutURL(err error) error {
	for {
		var ue *url.Error
		if !errors.As(err, &ue) {
			return err
		}
		if ue.Op == "parse" {
			// The cause of a parse error may quote the part at fault
			// (an invalid escape, a bad port), also secret.
			return errors.New("the notification URL does not parse")
		}
		if ue.Err == nil {
			return errors.New(ue.Op + " failed")
		}
		err = ue.Err
	}
}
