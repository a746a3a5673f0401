{{- define "driftguard.fullname" -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- define "driftguard.labels" -}}
app.kubernetes.io/name: driftguard
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}
{{- define "driftguard.selector" -}}
app.kubernetes.io/name: driftguard
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
