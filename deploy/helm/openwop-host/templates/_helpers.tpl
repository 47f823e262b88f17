{{/*
The chart's templates keep to a small subset of Helm's template language (values, variables, define,
include, if/else, range, and the functions default, quote, toYaml, nindent, trunc, trimSuffix, printf,
contains, required, b64enc, eq, not, and, or), so that the repository's tests can render them without
the helm binary (docs/deploy-kubernetes.md#how-the-chart-is-validated).
*/}}

{{/* The chart name, at most 63 characters. */}}
{{- define "openwop-host.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name: the release name when it already contains the chart name. */}}
{{- define "openwop-host.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The labels that select the host's pods. */}}
{{- define "openwop-host.selectorLabels" -}}
app.kubernetes.io/name: {{ include "openwop-host.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The labels of every object. */}}
{{- define "openwop-host.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | trunc 63 | trimSuffix "-" }}
{{ include "openwop-host.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The image reference. */}}
{{- define "openwop-host.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The Secret the host reads its secret settings from. */}}
{{- define "openwop-host.secretName" -}}
{{- default (include "openwop-host.fullname" .) .Values.secret.name -}}
{{- end -}}

{{/* The service account of the replicas. */}}
{{- define "openwop-host.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "openwop-host.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}
