package sopsfile

import (
	"regexp"
	"strings"
)

// rules decide which values of a file are encrypted, from the metadata's
// unencrypted_suffix, encrypted_suffix, unencrypted_regex,
// encrypted_regex, unencrypted_comment_regex and encrypted_comment_regex
// (at most one is set; none means unencrypted_suffix _unencrypted).
type rules struct {
	unencryptedSuffix, encryptedSuffix   string
	unencryptedRegex, encryptedRegex     matcher
	unencryptedComment, encryptedComment matcher
}

// matcher is a regular expression of the metadata. A set expression that
// does not compile matches nothing, as in sops (which ignores the error of
// regexp.Match): such a file has nothing encrypted by that rule.
type matcher struct {
	set bool
	re  *regexp.Regexp
}

func newMatcher(expr string) matcher {
	if expr == "" {
		return matcher{}
	}
	re, _ := regexp.Compile(expr)
	return matcher{set: true, re: re}
}

func (m matcher) match(s string) bool {
	return m.re != nil && m.re.MatchString(s)
}

// encrypted reports whether the value at path is encrypted, as sops'
// Tree.shouldBeEncrypted: path holds the keys from the document's root (not
// list indexes), stack the comments seen in each enclosing mapping or list
// since its last value, and isComment whether the value is a comment.
func (r rules) encrypted(path []string, stack [][]string, isComment bool) bool {
	enc := true
	if r.unencryptedSuffix != "" {
		for _, k := range path {
			if strings.HasSuffix(k, r.unencryptedSuffix) {
				enc = false
				break
			}
		}
	}
	if r.encryptedSuffix != "" {
		enc = false
		for _, k := range path {
			if strings.HasSuffix(k, r.encryptedSuffix) {
				enc = true
				break
			}
		}
	}
	if r.unencryptedRegex.set {
		for _, k := range path {
			if r.unencryptedRegex.match(k) {
				enc = false
				break
			}
		}
	}
	if r.encryptedRegex.set {
		enc = false
		for _, k := range path {
			if r.encryptedRegex.match(k) {
				enc = true
				break
			}
		}
	}
	if r.unencryptedComment.set && anyComment(stack, r.unencryptedComment, false) {
		enc = false
	}
	if r.encryptedComment.set {
		// A comment matching the expression is itself left plain: the
		// last comment seen is skipped when the value is that comment.
		enc = anyComment(stack, r.encryptedComment, isComment)
	}
	return enc
}

// anyComment reports whether a comment of stack matches m; skipLast leaves
// out the most recent comment of the innermost level.
func anyComment(stack [][]string, m matcher, skipLast bool) bool {
	for i, level := range stack {
		for j, c := range level {
			if skipLast && i == len(stack)-1 && j == len(level)-1 {
				continue
			}
			if m.match(c) {
				return true
			}
		}
	}
	return false
}
