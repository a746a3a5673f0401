package redact

import "testing"

func TestURL(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"user and token", "https://user:ghp_s3cret@git.example/org/infra.git", "https://git.example/org/infra.git"},
		{"token as user name", "https://ghp_s3cret@github.com/org/infra.git", "https://github.com/org/infra.git"},
		{"user and token, no path", "https://user:s3cret@git.example", "https://git.example"},
		{"escaped password", "https://user:p%40ss%2Fw@git.example/x.git", "https://git.example/x.git"},
		{"password with a slash", "http://user:pa/ss@git.example/x.git", "http://git.example/x.git"},
		{"password with an @", "https://user:p@ss@git.example/x.git", "https://git.example/x.git"},
		{"ssh URL", "ssh://git@git.example:2222/org/infra.git", "ssh://git.example:2222/org/infra.git"},
		{"scp-like", "git@git.example:org/infra.git", "git.example:org/infra.git"},
		{"does not parse", "https://user:s3cret@git.example/%zz", "https://git.example/%zz"},
		{"token query", "https://charts.example/index.yaml?token=s3cret&ref=main", "https://charts.example/index.yaml?token=REDACTED&ref=main"},
		{"access_token", "https://git.example/x.git?access_token=s3cret", "https://git.example/x.git?access_token=REDACTED"},
		{"private_token", "https://gl.example/x.git?private_token=s3cret", "https://gl.example/x.git?private_token=REDACTED"},
		{"S3 presigned", "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F1&X-Amz-Security-Token=t&X-Amz-Signature=abc",
			"https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=REDACTED&X-Amz-Security-Token=REDACTED&X-Amz-Signature=REDACTED"},
		{"Azure SAS", "https://a.blob.core.windows.net/c?sv=2020&se=x&sp=r&sig=s3cret%3D", "https://a.blob.core.windows.net/c?sv=2020&se=x&sp=r&sig=REDACTED"},
		{"escaped parameter name", "https://x.example/?%74oken=s3cret", "https://x.example/?%74oken=REDACTED"},
		{"parameter without value", "https://x.example/?token", "https://x.example/?token=REDACTED"},
		{"user, query and fragment", "https://u:p@x.example/a?sig=s#frag", "https://x.example/a?sig=REDACTED#frag"},
		{"nothing to take out", "https://git.example/org/infra.git", "https://git.example/org/infra.git"},
		{"@ in the path", "https://git.example/org/infra@v1", "https://git.example/org/infra@v1"},
		{"@ in the path, with a port", "https://git.example:8443/org/infra@v1", "https://git.example:8443/org/infra@v1"},
		{"harmless query", "https://charts.example/index.yaml?ref=main", "https://charts.example/index.yaml?ref=main"},
		{"oci", "oci://registry.example/org/app", "oci://registry.example/org/app"},
		{"file", "file:///tmp/repo", "file:///tmp/repo"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := URL(tt.in); got != tt.want {
				t.Fatalf("URL(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if got := URL(tt.want); got != tt.want {
				t.Fatalf("URL of a redacted URL %q = %q, want it unchanged", tt.want, got)
			}
		})
	}
}

func TestText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"fetch error", "fetch https://user:s3cret@git.example/x.git: authentication required", "fetch https://git.example/x.git: authentication required"},
		{"quoted parse error", `parse "https://user:s3cret@git.example/%zz": invalid URL escape "%zz"`, `parse "https://git.example/%zz": invalid URL escape "%zz"`},
		{"two URLs", "GET https://t@a.example/i?token=x failed; redirected to http://u:p@b.example/", "GET https://a.example/i?token=REDACTED failed; redirected to http://b.example/"},
		{"query before a colon", "fetch https://x.example/r.git?token=s3cret: refused", "fetch https://x.example/r.git?token=REDACTED: refused"},
		{"URL in parentheses", "(see https://u:p@x.example/r.git).", "(see https://x.example/r.git)."},
		{"no URL", "user@example.com changed it?", "user@example.com changed it?"},
		{"URL without credentials", "fetch https://git.example/x.git: not found", "fetch https://git.example/x.git: not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Text(tt.in); got != tt.want {
				t.Fatalf("Text(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
