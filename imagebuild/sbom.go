package imagebuild

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"time"
)

// SBOMMediaType is the media type of the SBOM (the artifact type of its
// referrer manifest, and its layer's media type).
const SBOMMediaType = "application/spdx+json"

// The SPDX 2.3 JSON fields this SBOM uses.
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	Name                  string         `json:"name"`
	SPDXID                string         `json:"SPDXID"`
	VersionInfo           string         `json:"versionInfo,omitempty"`
	DownloadLocation      string         `json:"downloadLocation"`
	FilesAnalyzed         bool           `json:"filesAnalyzed"`
	LicenseConcluded      string         `json:"licenseConcluded"`
	LicenseDeclared       string         `json:"licenseDeclared"`
	CopyrightText         string         `json:"copyrightText"`
	Checksums             []spdxChecksum `json:"checksums,omitempty"`
	ExternalRefs          []spdxExtRef   `json:"externalRefs,omitempty"`
	PrimaryPackagePurpose string         `json:"primaryPackagePurpose,omitempty"`
	Comment               string         `json:"comment,omitempty"`
}

type spdxChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type spdxExtRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

// SPDX identifiers of the fixed packages.
const (
	spdxImage  = "SPDXRef-Image"
	spdxBinary = "SPDXRef-Binary"
	spdxStdlib = "SPDXRef-Go-stdlib"
	spdxCA     = "SPDXRef-CA-certificates"
)

type sbomInput struct {
	info                      *buildinfo.BuildInfo
	binary                    []byte
	version, revision, source string
	created                   time.Time
	ca                        []byte
	caSource                  string
}

// spdx describes the image: the binary, the Go standard library and every
// module linked into it (from the binary's own build info, as `go version
// -m` prints it: path, version, go.sum hash), and the CA bundle.
func spdx(in sbomInput) ([]byte, error) {
	binSum := sha256.Sum256(in.binary)
	caSum := sha256.Sum256(in.ca)
	version := in.version
	if version == "" {
		version = in.info.Main.Version
	}
	source := in.source
	if source == "" {
		source = "https://" + in.info.Main.Path
	}
	doc := spdxDocument{
		SPDXVersion: "SPDX-2.3",
		DataLicense: "CC0-1.0",
		SPDXID:      "SPDXRef-DOCUMENT",
		Name:        "driftguard image " + version,
		// Unique per binary; the same binary gives the same document.
		DocumentNamespace: strings.TrimSuffix(source, "/") + "/spdx/" + hex.EncodeToString(binSum[:]),
		CreationInfo: spdxCreationInfo{
			Created:  in.created.UTC().Format(time.RFC3339),
			Creators: []string{"Tool: driftguard-imagebuild"},
		},
	}
	comment := "built by " + in.info.GoVersion
	for _, s := range in.info.Settings {
		if s.Key == "-ldflags" || s.Key == "-trimpath" || s.Key == "CGO_ENABLED" || s.Key == "GOARCH" || s.Key == "GOOS" {
			comment += ", " + s.Key + "=" + s.Value
		}
	}
	image := pkg("driftguard", spdxImage, version, "CONTAINER")
	image.DownloadLocation = source
	if in.revision != "" {
		image.Comment = "revision " + in.revision
	}
	bin := pkg(in.info.Main.Path, spdxBinary, version, "APPLICATION")
	bin.DownloadLocation = source
	bin.Checksums = []spdxChecksum{{"SHA256", hex.EncodeToString(binSum[:])}}
	bin.ExternalRefs = []spdxExtRef{purl(in.info.Main.Path, version)}
	bin.Comment = BinaryPath + " in the image, " + comment
	goVersion := strings.TrimPrefix(in.info.GoVersion, "go")
	std := pkg("stdlib", spdxStdlib, "go"+goVersion, "LIBRARY")
	std.ExternalRefs = []spdxExtRef{purl("stdlib", "go"+goVersion)}
	ca := pkg("ca-certificates", spdxCA, "", "FILE")
	ca.Checksums = []spdxChecksum{{"SHA256", hex.EncodeToString(caSum[:])}}
	ca.Comment = CAPath + " in the image, from " + in.caSource
	if m := caModuleInfo(); m != nil && strings.HasPrefix(in.caSource, caModule+" ") {
		ca.VersionInfo = m.Version
		ca.ExternalRefs = []spdxExtRef{purl(m.Path, m.Version)}
		ca.Comment += " (the Mozilla NSS roots without a distrust-after constraint; module " + m.Sum + ")"
	}
	doc.Packages = []spdxPackage{image, bin, std, ca}
	doc.Relationships = []spdxRelationship{
		{"SPDXRef-DOCUMENT", "DESCRIBES", spdxImage},
		{spdxImage, "CONTAINS", spdxBinary},
		{spdxImage, "CONTAINS", spdxCA},
		{spdxBinary, "DEPENDS_ON", spdxStdlib},
	}
	for i, d := range in.info.Deps {
		p, err := modulePackage(i, d)
		if err != nil {
			return nil, err
		}
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, spdxRelationship{spdxBinary, "DEPENDS_ON", p.SPDXID})
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("imagebuild: SBOM: %w", err)
	}
	return append(out, '\n'), nil
}

// modulePackage is a module the binary links. Its checksum is the module's
// go.sum hash (h1:, the SHA-256 of Go's dirhash of the module) in hex; a
// module replaced by a local folder has none, and says so.
func modulePackage(i int, d *debug.Module) (spdxPackage, error) {
	m := d
	comment := ""
	if d.Replace != nil {
		m = d.Replace
		if isLocalPath(m.Path) { // a folder: keep the version it stands in for
			comment = "replaced by the local folder " + m.Path + " (no module checksum)"
			m = &debug.Module{Path: d.Path, Version: d.Version}
		} else {
			comment = "replaces " + d.Path + " " + d.Version
		}
	}
	p := pkg(m.Path, fmt.Sprintf("SPDXRef-Go-module-%d-%s", i, spdxSafe(m.Path)), m.Version, "LIBRARY")
	p.ExternalRefs = []spdxExtRef{purl(m.Path, m.Version)}
	p.Comment = comment
	if m.Sum != "" {
		h, ok := strings.CutPrefix(m.Sum, "h1:")
		raw, err := base64.StdEncoding.DecodeString(h)
		if !ok || err != nil || len(raw) != sha256.Size {
			return spdxPackage{}, fmt.Errorf("imagebuild: SBOM: module %s %s: hash %q is not an h1: SHA-256", m.Path, m.Version, m.Sum)
		}
		p.Checksums = []spdxChecksum{{"SHA256", hex.EncodeToString(raw)}}
	}
	return p, nil
}

func pkg(name, id, version, purpose string) spdxPackage {
	return spdxPackage{
		Name: name, SPDXID: id, VersionInfo: version,
		DownloadLocation: "NOASSERTION", LicenseConcluded: "NOASSERTION", LicenseDeclared: "NOASSERTION",
		CopyrightText: "NOASSERTION", PrimaryPackagePurpose: purpose,
	}
}

// purl is the package URL of a Go module (purl-spec, type golang).
func purl(path, version string) spdxExtRef {
	loc := "pkg:golang/" + path
	if version != "" {
		loc += "@" + strings.ReplaceAll(version, "+", "%2B")
	}
	return spdxExtRef{"PACKAGE-MANAGER", "purl", loc}
}

// spdxSafe maps a module path to the characters an SPDX identifier allows.
func spdxSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, s)
}

// isLocalPath reports whether a replacement names a folder (go.mod: a path
// that begins with ./, ../ or /) rather than a module.
func isLocalPath(p string) bool {
	return strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/")
}
