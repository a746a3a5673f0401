package sopsfile

import (
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
	"strings"
	"time"
)

// The tree of a file as sops sees it, in the order sops walks it: a
// mapping is a branch of items (key and value pairs, and YAML comments as
// items of their own), a list holds its elements and comments. Values are
// *branch, *list, *leaf or nil (null, which sops neither decrypts nor
// hashes). Each leaf knows how to write its decrypted value back into the
// format's own tree.
type (
	branch struct{ items []item }
	item   struct {
		key     string
		comment *leaf // a comment item; key and value are unset
		value   any
	}
	list struct{ elems []any }
	leaf struct {
		value     any       // as the format decodes it: string, int, float64, bool, ...
		isComment bool      // value is the text of a comment line, without its #
		line      int       // where the value is, for errors
		set       func(any) // writes the decrypted value back
	}
)

// maxValues bounds the values one file may expand to through YAML aliases.
const maxValues = 1 << 20

var errTooLarge = fmt.Errorf("the file expands to more than %d values", maxValues)

// walker decrypts the values of a tree and computes its MAC, as sops'
// Tree.Decrypt: depth first, in file order, with the keys from the root
// joined by ":" and ended by ":" as the additional data of each value.
type walker struct {
	cipher  dataCipher
	rules   rules
	macOnly bool
	mac     hash.Hash
	plain   []string // the decrypted values, as text
}

func newWalker(c dataCipher, md metadata) *walker {
	w := &walker{cipher: c, rules: md.rules, macOnly: md.macOnlyEncrypted, mac: sha512.New()}
	if w.macOnly {
		w.mac.Write(macOnlyEncryptedInit)
	}
	return w
}

// sum is the MAC of the values walked so far, as sops writes it.
func (w *walker) sum() string {
	return fmt.Sprintf("%X", w.mac.Sum(nil))
}

func (w *walker) value(v any, path []string, stack [][]string) error {
	switch v := v.(type) {
	case nil:
		return nil
	case *branch:
		return w.branch(v, path, stack)
	case *list:
		return w.list(v, path, stack)
	case *leaf:
		return w.leaf(v, path, stack)
	}
	return fmt.Errorf("internal error: unknown node %T", v)
}

// branch walks a mapping. Comments seen since the last value are kept on
// the stack for the comment rules.
func (w *walker) branch(b *branch, path []string, stack [][]string) error {
	stack = append(stack[:len(stack):len(stack)], nil)
	top := len(stack) - 1
	for _, it := range b.items {
		if it.comment != nil {
			stack[top] = append(stack[top], it.comment.value.(string))
			if err := w.leaf(it.comment, path, stack); err != nil {
				return err
			}
			continue
		}
		if err := w.value(it.value, append(path[:len(path):len(path)], it.key), stack); err != nil {
			return err
		}
		stack[top] = nil
	}
	return nil
}

// list walks a list; its elements have the list's path.
func (w *walker) list(l *list, path []string, stack [][]string) error {
	stack = append(stack[:len(stack):len(stack)], nil)
	top := len(stack) - 1
	for _, e := range l.elems {
		if c, ok := e.(*leaf); ok && c.isComment {
			stack[top] = append(stack[top], c.value.(string))
			if err := w.leaf(c, path, stack); err != nil {
				return err
			}
			continue
		}
		if err := w.value(e, path, stack); err != nil {
			return err
		}
		stack[top] = nil
	}
	return nil
}

// leaf decrypts one value when the rules say it is encrypted, and hashes
// the plain value into the MAC (unless it is a comment, or the file has
// mac_only_encrypted and the value is not encrypted).
func (w *walker) leaf(l *leaf, path []string, stack [][]string) error {
	if _, err := macBytes(l.value); err != nil {
		return fmt.Errorf("%s has %w", where(path, l.line), err)
	}
	enc := w.rules.encrypted(path, stack, l.isComment)
	v := l.value
	if l.isComment {
		v = comment(l.value.(string))
	}
	if enc {
		ad := strings.Join(path, ":") + ":"
		s, isString := l.value.(string)
		switch {
		case l.isComment:
			// A comment that does not decrypt was not encrypted (files
			// written by old sops versions); sops keeps it as it is.
			if plain, err := w.cipher.decrypt(s, ad); err == nil {
				v = plain
			}
		case !isString:
			return fmt.Errorf("the value of %s is not encrypted, though the file's rules say it should be", where(path, l.line))
		default:
			plain, err := w.cipher.decrypt(s, ad)
			if errors.Is(err, errAuth) {
				return fmt.Errorf("the value of %s does not decrypt: %w", where(path, l.line), ErrModified)
			}
			if errors.Is(err, errNotEncrypted) {
				return fmt.Errorf("the value of %s is not encrypted, though the file's rules say it should be", where(path, l.line))
			}
			if err != nil {
				return fmt.Errorf("the value of %s: %w", where(path, l.line), err)
			}
			v = plain
		}
	}
	if _, isComment := v.(comment); !isComment && (!w.macOnly || enc) {
		b, err := macBytes(v)
		if err != nil {
			return fmt.Errorf("%s has %w", where(path, l.line), err)
		}
		w.mac.Write(b)
	}
	if enc && !l.isComment {
		w.plain = append(w.plain, plainText(v))
	}
	if enc && l.set != nil {
		l.set(v)
	}
	return nil
}

// plainText is a decrypted value as text.
func plainText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case time.Time:
		return v.Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

// where names a value by its keys and line; keys are plain in SOPS files.
func where(path []string, line int) string {
	p := strings.Join(path, ".")
	if p == "" {
		p = "the document root"
	}
	if line > 0 {
		return fmt.Sprintf("%s (line %d)", p, line)
	}
	return p
}
