package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// SignatureHeader carries the HMAC-SHA256 of a generic notification's body
// under the Secret's hmacKey: "sha256=" and the lower-case hex digest.
const SignatureHeader = "X-Driftguard-Signature"

// Sign returns the value of SignatureHeader for body under key.
func Sign(key, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// titles of the kinds, for chat messages.
var titles = map[string]string{SyncFailed: "Sync failed", Degraded: "Guard degraded", Drift: "Drift from Git"}

// facts are the name/value lines of a chat message, in order.
func facts(n Notification) [][2]string {
	out := [][2]string{{"Guard", n.Guard}, {"Kind", n.Kind}}
	if n.Object != "" {
		out = append(out, [2]string{"Object", n.Object})
	}
	if n.Source != nil {
		if n.Source.Revision != "" {
			out = append(out, [2]string{"Revision", n.Source.Revision})
		}
		if n.Source.Path != "" {
			file := n.Source.Path
			if n.Source.Line > 0 {
				file = fmt.Sprintf("%s:%d", file, n.Source.Line)
			}
			out = append(out, [2]string{"File", file})
		}
	}
	if len(n.Fields) > 0 {
		paths := make([]string, 0, len(n.Fields))
		for i, f := range n.Fields {
			if i == 10 {
				paths = append(paths, fmt.Sprintf("… %d more", len(n.Fields)-10))
				break
			}
			paths = append(paths, f.Path)
		}
		out = append(out, [2]string{"Fields", strings.Join(paths, ", ")})
	}
	if n.Suppressed > 0 {
		out = append(out, [2]string{"Held back", fmt.Sprintf("%d earlier of this kind (rate limit)", n.Suppressed)})
	}
	return out
}

// cut shortens s to at most max bytes, on a rune boundary, marking the cut.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max - len("…")
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// slackEscape makes text that a writer may choose (object and user names,
// error messages) plain in Slack's mrkdwn: "<!channel>" or "<https://x|y>"
// would otherwise ping everyone or show a link.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// slackBody is an incoming-webhook message: text (the fallback shown in
// notifications) and blocks: a header, the summary, the facts, and the
// time in a context block.
func slackBody(n Notification) ([]byte, error) {
	type text struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type block struct {
		Type     string `json:"type"`
		Text     *text  `json:"text,omitempty"`
		Fields   []text `json:"fields,omitempty"`
		Elements []text `json:"elements,omitempty"`
	}
	var fields []text
	for _, f := range facts(n) {
		fields = append(fields, text{"mrkdwn", cut("*"+f[0]+"*\n"+slackEscape(f[1]), 2000)})
	}
	if len(fields) > 10 { // Slack's limit per section
		fields = fields[:10]
	}
	summary := slackEscape(n.Summary)
	msg := struct {
		Text   string  `json:"text"`
		Blocks []block `json:"blocks"`
	}{
		Text: cut(summary, 3000),
		Blocks: []block{
			{Type: "header", Text: &text{"plain_text", cut("driftguard: "+titles[n.Kind]+" ("+n.Guard+")", 150)}},
			{Type: "section", Text: &text{"mrkdwn", cut(summary, 3000)}},
			{Type: "section", Fields: fields},
			{Type: "context", Elements: []text{{"mrkdwn", n.Time.UTC().Format("2006-01-02 15:04:05 UTC")}}},
		},
	}
	return json.Marshal(msg)
}

// teamsEscape keeps text a writer may choose from becoming a Markdown link
// in an Adaptive Card's TextBlock or fact.
func teamsEscape(s string) string {
	return strings.NewReplacer("](", "] (", "<", "&lt;", ">", "&gt;").Replace(s)
}

// teamsBody is a Teams message whose one attachment is an Adaptive Card:
// what a Teams Workflows "post to a channel when a webhook request is
// received" flow and an incoming webhook take.
func teamsBody(n Notification) ([]byte, error) {
	type fact struct {
		Title string `json:"title"`
		Value string `json:"value"`
	}
	type element struct {
		Type   string `json:"type"`
		Text   string `json:"text,omitempty"`
		Weight string `json:"weight,omitempty"`
		Size   string `json:"size,omitempty"`
		Wrap   bool   `json:"wrap,omitempty"`
		Facts  []fact `json:"facts,omitempty"`
	}
	type card struct {
		Schema  string    `json:"$schema"`
		Type    string    `json:"type"`
		Version string    `json:"version"`
		Body    []element `json:"body"`
	}
	type attachment struct {
		ContentType string  `json:"contentType"`
		ContentURL  *string `json:"contentUrl"`
		Content     card    `json:"content"`
	}
	var fs []fact
	for _, f := range facts(n) {
		fs = append(fs, fact{f[0], teamsEscape(f[1])})
	}
	fs = append(fs, fact{"Time", n.Time.UTC().Format("2006-01-02 15:04:05 UTC")})
	msg := struct {
		Type        string       `json:"type"`
		Attachments []attachment `json:"attachments"`
	}{
		Type: "message",
		Attachments: []attachment{{
			ContentType: "application/vnd.microsoft.card.adaptive",
			Content: card{
				Schema: "http://adaptivecards.io/schemas/adaptive-card.json", Type: "AdaptiveCard", Version: "1.4",
				Body: []element{
					{Type: "TextBlock", Text: teamsEscape("driftguard: " + titles[n.Kind] + " (" + n.Guard + ")"), Weight: "Bolder", Size: "Medium", Wrap: true},
					{Type: "TextBlock", Text: teamsEscape(cut(n.Summary, 4000)), Wrap: true},
					{Type: "FactSet", Facts: fs},
				},
			},
		}},
	}
	return json.Marshal(msg)
}
