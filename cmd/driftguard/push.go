package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/spf13/cobra"

	"github.com/driftguard/driftguard/source"
)

type pushArtifactOptions struct {
	to, source, revision string
	creds                string
	insecure             bool
}

func newPushCommand() *cobra.Command {
	push := &cobra.Command{
		Use:   "push",
		Short: "Publish what the guard consumes",
	}
	o := &pushArtifactOptions{}
	artifact := &cobra.Command{
		Use:   "artifact DIR --to oci://REGISTRY/REPOSITORY:TAG",
		Short: "Package a folder of manifests as an OCI artifact and push it",
		Long: `push artifact packages the files below DIR (folders named .git left out)
as a tar.gz layer of an OCI artifact, with the media types flux push artifact
uses (config application/vnd.cncf.flux.config.v1+json, layer
application/vnd.cncf.flux.content.v1.tar+gzip), and pushes it. A Guard with
spec.oci consumes it; so does Flux's OCIRepository.

The same files make the same layer (no times, fixed modes), so pushing an
unchanged folder again does not change what a Guard applies. It prints the
reference with the digest.

Credentials: --creds USER:PASSWORD, or $DRIFTGUARD_REGISTRY_TOKEN (a bearer
token), else those of the Docker config (~/.docker/config.json).`,
		Example: `  driftguard push artifact ./deploy --to oci://ghcr.io/acme/shop-deploy:v1.4.0 \
    --source "$(git config --get remote.origin.url)" --revision "main@sha1:$(git rev-parse HEAD)"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !strings.HasPrefix(o.to, "oci://") {
				return fmt.Errorf("--to %q: want oci://REGISTRY/REPOSITORY:TAG", o.to)
			}
			popts := source.PushOptions{Source: o.source, Revision: o.revision, Insecure: o.insecure}
			switch token := os.Getenv("DRIFTGUARD_REGISTRY_TOKEN"); {
			case o.creds != "":
				user, pass, ok := strings.Cut(o.creds, ":")
				if !ok {
					return fmt.Errorf("--creds: want USER:PASSWORD")
				}
				popts.Auth = &authn.Basic{Username: user, Password: pass}
			case token != "":
				popts.Auth = &authn.Bearer{Token: token}
			}
			ref, err := source.Push(cmd.Context(), args[0], o.to, popts)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pushed %s\n", ref)
			return nil
		},
	}
	artifact.Flags().StringVar(&o.to, "to", "", "where to push: oci://REGISTRY/REPOSITORY:TAG (required)")
	artifact.Flags().StringVar(&o.source, "source", "", "annotation org.opencontainers.image.source: where the files come from")
	artifact.Flags().StringVar(&o.revision, "revision", "", "annotation org.opencontainers.image.revision: which revision of the source")
	artifact.Flags().StringVar(&o.creds, "creds", "", "registry credentials USER:PASSWORD")
	artifact.Flags().BoolVar(&o.insecure, "insecure", false, "allow plain HTTP to the registry")
	_ = artifact.MarkFlagRequired("to")
	push.AddCommand(artifact)
	return push
}
