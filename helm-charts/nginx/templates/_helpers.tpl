{{/*
Chart name, truncated to the 63 characters a label value allows.
*/}}
{{- define "nginx.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name of the resources. The release name is used alone when it already
contains the chart name (so the custom resource "nginx-sample" yields
"nginx-sample", not "nginx-sample-nginx").
*/}}
{{- define "nginx.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Chart name and version for the helm.sh/chart label.
*/}}
{{- define "nginx.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels that select the pods. Never change these on an existing release:
a Deployment's selector is immutable.
*/}}
{{- define "nginx.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nginx.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Labels on every resource.
*/}}
{{- define "nginx.labels" -}}
helm.sh/chart: {{ include "nginx.chart" . }}
{{ include "nginx.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | replace "+" "_" | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/component: web-server
app.kubernetes.io/part-of: {{ default (include "nginx.name" .) .Values.partOf }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The label of a Pod that an ingress NetworkPolicy of this chart selects: a
NamespaceTenant's namespace-wide allowances skip Pods that carry it, so
inside a tenant's namespace that policy alone decides who reaches them
(docs/namespacetenant.md#network-isolation).
*/}}
{{- define "nginx.ownIngressPolicyLabel" -}}
platform.acme.com/own-ingress-policy: "true"
{{- end }}

{{/*
Name of the ServiceAccount the pods run as.
*/}}
{{- define "nginx.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "nginx.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
"true" while the chart owns the Deployment's replica count, "false" when an
autoscaler (autoscaling.enabled), the chart's CronScaler
(cronScaling.enabled) or an outside controller (externalReplicaControl)
does and spec.replicas must be left out.
*/}}
{{- define "nginx.ownsReplicas" -}}
{{- if or .Values.autoscaling.enabled .Values.cronScaling.enabled .Values.externalReplicaControl }}false{{ else }}true{{ end }}
{{- end }}

{{/*
Image reference of an image values block: "repository@digest" when the
block has a digest, "repository:tag" otherwise.
*/}}
{{- define "nginx.image" -}}
{{- if .digest }}
{{- printf "%s@%s" .repository .digest }}
{{- else }}
{{- printf "%s:%s" .repository .tag }}
{{- end }}
{{- end }}

{{/*
Secret name holding the Ingress certificate.
*/}}
{{- define "nginx.tlsSecretName" -}}
{{- default (printf "%s-tls" (include "nginx.fullname" .)) .Values.ingress.tls.secretName }}
{{- end }}

{{/*
An HTTP probe for the nginx container. Called with a dict of
"probe" (a livenessProbe/readinessProbe values block).
*/}}
{{- define "nginx.httpProbe" -}}
httpGet:
  path: {{ .probe.path }}
  port: http
initialDelaySeconds: {{ .probe.initialDelaySeconds }}
periodSeconds: {{ .probe.periodSeconds }}
timeoutSeconds: {{ .probe.timeoutSeconds }}
failureThreshold: {{ .probe.failureThreshold }}
{{- end }}

{{/*
Restricted container securityContext (Pod Security Standard "restricted").
*/}}
{{- define "nginx.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ int64 .Values.podSecurityContext.runAsUser }}
runAsGroup: {{ int64 .Values.podSecurityContext.runAsGroup }}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/*
Checks across values that the schema cannot express. Renders nothing.
*/}}
{{- define "nginx.validate" -}}
{{- $http := int .Values.containerPort }}
{{- $status := int .Values.statusPort }}
{{- if eq $http $status }}
{{- fail "containerPort and statusPort must differ" }}
{{- end }}
{{- if and .Values.metrics.enabled (has (int .Values.metrics.port) (list $http $status)) }}
{{- fail "metrics.port must differ from containerPort and statusPort" }}
{{- end }}
{{- end }}
