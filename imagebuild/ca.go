package imagebuild

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"runtime/debug"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// caModule is the module whose roots CABundle takes.
const caModule = "golang.org/x/crypto/x509roots/fallback"

// CABundle returns the Mozilla NSS root certificates that Go's
// x509roots/fallback module carries, as PEM, in the module's order. Roots
// that the NSS store trusts only with a constraint a PEM file cannot carry
// (a distrust-after date) are left out: a program reading the file would
// trust them without the constraint. The bundle changes only when go.mod
// moves the module, so the image is the same on every machine.
func CABundle() []byte {
	var buf bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
	}
	return buf.Bytes()
}

// caBundle returns the CA bundle for the image and where it came from: the
// file given, or CABundle.
func caBundle(file string) ([]byte, string, error) {
	if file == "" {
		v := "(unknown)"
		if m := caModuleInfo(); m != nil {
			v = m.Version
		}
		return CABundle(), caModule + " " + v, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, "", fmt.Errorf("imagebuild: CA file (-ca-file): %w", err)
	}
	n, rest := 0, b
	for {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
			return nil, "", fmt.Errorf("imagebuild: CA file %s: certificate %d: %w", file, n+1, err)
		}
		n++
	}
	if n == 0 {
		return nil, "", fmt.Errorf("imagebuild: CA file %s holds no PEM certificate", file)
	}
	return b, file, nil
}

// caModuleInfo is the x509roots/fallback module linked into this program
// (its replacement, if go.mod replaces it), nil without build info.
func caModuleInfo() *debug.Module {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == caModule {
				if d.Replace != nil {
					return d.Replace
				}
				return d
			}
		}
	}
	return nil
}
