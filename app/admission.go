package app

import (
	"context"
	"crypto/tls"
	"slices"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/driftguard/driftguard/apply"
	"github.com/driftguard/driftguard/webhook"
)

// addAdmission serves the admission webhooks (the validator, and the
// stamper that names the writer of each admitted change) with the serving
// certificate, and registers them once the server listens when the guard
// registers its own configurations.
func addAdmission(d deps, c *controllers) error {
	mgr, o := d.mgr, d.o
	validator, err := webhook.NewValidator(webhook.ValidatorOptions{
		Store: c.store, Policy: d.engine, Settings: c.settings, Options: c.applier.Options, WriteOptions: c.applier.WriteOptions,
		Mapper: mgr.GetRESTMapper(), Audit: d.audit, FailClosed: o.FailurePolicy == "Fail",
		Deadline: o.WebhookTimeout * 4 / 5, Log: d.log.WithName("webhook"),
	})
	if err != nil {
		return err
	}
	stamper := &webhook.Stamper{Validator: validator, Stamps: c.stamps}
	server, err := newWebhookServer(o, d.serving, validator, stamper, d.log)
	if err != nil {
		return err
	}
	if err := mgr.Add(server); err != nil {
		return err
	}
	if c.registrar == nil {
		return nil
	}
	return mgr.Add(registrar(server, c.registrar, o, d.serving.CABundle(), d.self, d.log))
}

// newWebhookServer serves the validator and the stamper on --webhook-addr
// with the serving certificate, --tls-min-version and, when set, the client
// certificates the API server must present.
func newWebhookServer(o Options, serving servingCerts, validator *webhook.Validator, stamper *webhook.Stamper, log logr.Logger) (*webhook.Server, error) {
	server := webhook.NewServer(o.WebhookAddr, tls.Certificate{}, validator, stamper, log.WithName("webhook"))
	server.GetCertificate = serving.GetCertificate
	server.MinVersion, _ = o.tlsMinVersion()
	clientCAs, err := o.webhookClientCAs()
	if err != nil {
		return nil, err
	}
	server.ClientCAs, server.ClientNames = clientCAs, o.WebhookClientNames
	// Bodies are bounded before they are read: the in-flight slots and
	// bytes are taken first (the validator's own bound is then not needed).
	server.Limits = webhook.Limits{MaxInFlight: o.MaxInFlight, MaxRequestBytes: o.WebhookMaxRequestBytes,
		MaxBytesInFlight: o.WebhookMaxBytesInFlight, Deadline: o.WebhookTimeout * 4 / 5}
	return server, nil
}

// registrar registers the webhook configurations once the server listens,
// and again whenever the kinds in Git change. It runs on the leader only: one
// writer, so that replicas never take turns. The guard's own requests (self)
// are not sent to the webhooks.
func registrar(server *webhook.Server, reg *webhook.Registrar, o Options, ca []byte, self string, log logr.Logger) manager.Runnable {
	return manager.RunnableFunc(func(ctx context.Context) error {
		addr, err := server.BoundAddr(ctx)
		if err != nil {
			return nil
		}
		url := o.WebhookURL
		if url == "" {
			url = "https://" + addr.String()
		}
		registration := webhook.Registration{
			Name: o.WebhookConfigName, URL: url, CABundle: ca,
			FailurePolicy:  admissionregistrationv1.FailurePolicyType(o.FailurePolicy),
			TimeoutSeconds: int32(o.WebhookTimeout / time.Second), LabelKey: apply.GuardLabel,
			ExcludeNamespaces: o.excludedNamespaces(), SkipUsers: []string{self},
			// The service accounts Guards act as write what Git says, as the
			// guard does; they are all of its own namespace, whose pods can
			// run as the guard itself anyway.
			SkipUserPrefixes: []string{apply.ServiceAccountPrefix(o.Namespace)},
			DecideInMutating: o.AdmissionMode != ModeWebhook,
		}
		if o.WebhookService != "" {
			registration.ServiceNamespace, registration.ServiceName, registration.ServicePort = o.Namespace, o.WebhookService, o.WebhookServicePort
		}
		log.Info("registering webhook", "configuration", o.WebhookConfigName, "url", url)
		return reg.Run(ctx, registration)
	})
}

// webhookHosts are the names the serving certificate is for: --webhook-host
// and, with --webhook-service, the Service's names.
func webhookHosts(o Options) []string {
	hosts := slices.Clone(o.WebhookHosts)
	if o.WebhookService != "" {
		svc := o.WebhookService + "." + o.Namespace
		hosts = append(hosts, o.WebhookService, svc, svc+".svc", svc+".svc.cluster.local")
	}
	return hosts
}
