// Command driftguard-image builds driftguard's container image without a
// container engine (package imagebuild) and writes it as a tarball or an OCI
// layout, or pushes it with its SBOM. `make image` runs it; see
// docs/install.md, Image.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/pflag"

	"github.com/driftguard/driftguard/imagebuild"
)

// options are the command's flags.
type options struct {
	build      imagebuild.Options
	created    string
	tag        string
	tarball    string
	layout     string
	push       string
	defaultTag string
	sbom       string
	insecure   bool
}

func (o *options) bindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.build.Binary, "binary", "bin/driftguard", "the static driftguard binary (make build)")
	fs.StringVar(&o.build.Version, "version", "", "version label (org.opencontainers.image.version) and the SBOM's version of driftguard")
	fs.StringVar(&o.build.Revision, "revision", "", "commit label (org.opencontainers.image.revision)")
	fs.StringVar(&o.build.Source, "source", "https://github.com/driftguard/driftguard", "source label (org.opencontainers.image.source)")
	fs.StringVar(&o.created, "created", os.Getenv("SOURCE_DATE_EPOCH"), "creation time, Unix seconds or RFC 3339: the commit time (git log -1 --format=%ct); default $SOURCE_DATE_EPOCH")
	fs.StringVar(&o.build.CAFile, "ca-file", "", "PEM bundle to install as "+imagebuild.CAPath+" (default: the Mozilla roots of golang.org/x/crypto/x509roots/fallback, as go.mod pins it)")
	fs.StringVar(&o.tag, "tag", "ghcr.io/driftguard/driftguard:dev", "the image's name in the tarball or layout")
	fs.StringVar(&o.tarball, "tarball", "", "write the image to this tarball (docker load, podman load, crane push read it)")
	fs.StringVar(&o.layout, "layout", "", "write the image into this OCI image layout folder")
	fs.StringVar(&o.push, "push", "", "push the image to this reference (REGISTRY/REPO[:TAG]) and its SBOM as an OCI referrer")
	fs.StringVar(&o.defaultTag, "default-tag", "latest", "the tag of a --push reference that names none")
	fs.StringVar(&o.sbom, "sbom", "", "write the SBOM (SPDX JSON) here (default: beside the tarball or layout, NAME.spdx.json)")
	fs.BoolVar(&o.insecure, "insecure", false, "allow plain HTTP to the registry of --push")
}

func main() {
	o := &options{}
	fs := pflag.NewFlagSet("driftguard-image", pflag.ContinueOnError)
	o.bindFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "driftguard-image:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "driftguard-image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o *options) error {
	outs := 0
	for _, s := range []string{o.tarball, o.layout, o.push} {
		if s != "" {
			outs++
		}
	}
	if outs != 1 {
		return errors.New("give exactly one of --tarball, --layout and --push")
	}
	created, err := parseCreated(o.created)
	if err != nil {
		return err
	}
	o.build.Created = created
	res, err := imagebuild.Build(o.build)
	if err != nil {
		return err
	}
	if o.push != "" {
		var nameOpts []name.Option
		if o.insecure {
			nameOpts = append(nameOpts, name.Insecure)
		}
		ref, err := name.ParseReference(o.push, append(nameOpts, name.WithDefaultTag(o.defaultTag))...)
		if err != nil {
			return fmt.Errorf("--push %q: %w", o.push, err)
		}
		pushed, err := res.Push(ctx, ref, authn.DefaultKeychain)
		if err != nil {
			return err
		}
		fmt.Printf("pushed %s@%s\nSBOM   %s@%s (referrer of the image, %s)\n", ref, pushed.Image, ref.Context(), pushed.SBOM, imagebuild.SBOMMediaType)
		if o.sbom != "" {
			return os.WriteFile(o.sbom, res.SBOM, 0o644)
		}
		return nil
	}
	tag, err := name.NewTag(o.tag)
	if err != nil {
		return fmt.Errorf("--tag %q: %w", o.tag, err)
	}
	out := o.tarball
	if out == "" {
		out = o.layout
	}
	sbom := o.sbom
	if sbom == "" {
		sbom = strings.TrimSuffix(strings.TrimSuffix(out, "/"), ".tar") + ".spdx.json"
	}
	if o.tarball != "" {
		err = res.WriteTarball(o.tarball, tag, sbom)
	} else {
		err = res.WriteLayout(o.layout, tag, sbom)
	}
	if err != nil {
		return err
	}
	digest, err := res.Image.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s (%s@%s)\nSBOM  %s\n", out, tag, digest, sbom)
	return nil
}

// parseCreated reads Unix seconds (SOURCE_DATE_EPOCH, git log --format=%ct)
// or an RFC 3339 time.
func parseCreated(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, errors.New("--created is required (the commit time: git log -1 --format=%ct), so that the same commit gives the same image")
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--created %q: neither Unix seconds nor RFC 3339", s)
	}
	return t.UTC(), nil
}
