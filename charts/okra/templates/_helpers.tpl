{{- define "okra.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains "okra" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-okra" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "okra.serviceAccountName" -}}
{{- default (printf "%s-controller-manager" (include "okra.fullname" .)) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "okra.selectorLabels" -}}
app.kubernetes.io/name: okra
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end -}}

{{- define "okra.labels" -}}
app.kubernetes.io/name: okra
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The rules of a generated role in files/ (a copy of config/rbac). */}}
{{- define "okra.rules" -}}
{{- $doc := .root.Files.Get .file | fromYaml -}}
{{- toYaml $doc.rules -}}
{{- end -}}
