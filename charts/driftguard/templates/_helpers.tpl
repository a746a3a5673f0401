{{/* The chart name, or nameOverride. */}}
{{- define "driftguard.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The full name of every resource: fullnameOverride, else the release name when
it contains the chart name, else "<release>-<chart name>".
*/}}
{{- define "driftguard.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "driftguard.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* chart-version, for the helm.sh/chart label. */}}
{{- define "driftguard.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every resource. */}}
{{- define "driftguard.labels" -}}
helm.sh/chart: {{ include "driftguard.chart" . }}
{{ include "driftguard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: driftguard
{{- end -}}

{{/* Labels that select the guard's pods. */}}
{{- define "driftguard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "driftguard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "driftguard.serviceAccountName" -}}
{{- default (include "driftguard.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* Name of both webhook configurations. */}}
{{- define "driftguard.webhookConfigName" -}}
{{- default (include "driftguard.fullname" .) .Values.webhook.configName -}}
{{- end -}}

{{/* Name of the Secret holding the webhook's CA and serving certificate. */}}
{{- define "driftguard.certSecretName" -}}
{{- printf "%s-webhook-tls" (include "driftguard.fullname" .) -}}
{{- end -}}

{{/*
Namespaces never sent to the webhook, in the order the guard registers them:
kube-system, the release namespace, then webhook.excludeNamespaces.
*/}}
{{- define "driftguard.excludedNamespaces" -}}
{{- $ns := list "kube-system" .Release.Namespace -}}
{{- range .Values.webhook.excludeNamespaces -}}
{{- if not (has . $ns) -}}{{- $ns = append $ns . -}}{{- end -}}
{{- end -}}
{{- join "," $ns -}}
{{- end -}}

{{/* The image, with the tag defaulting to the chart's appVersion. */}}
{{- define "driftguard.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The policy ConfigMap the guard mounts, empty for the built-in policy. */}}
{{- define "driftguard.policyConfigMap" -}}
{{- if .Values.policy.configMap -}}
{{- .Values.policy.configMap -}}
{{- else if .Values.policy.defaultConfigMap -}}
{{- printf "%s-policy" (include "driftguard.fullname" .) -}}
{{- end -}}
{{- end -}}
