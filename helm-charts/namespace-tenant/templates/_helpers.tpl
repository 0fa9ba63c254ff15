{{/*
Chart name and version for the helm.sh/chart label.
*/}}
{{- define "namespace-tenant.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels on every object. tenancy.acme.com/tenant names the tenant (the
release, which is the NamespaceTenant's name).
*/}}
{{- define "namespace-tenant.labels" -}}
helm.sh/chart: {{ include "namespace-tenant.chart" . }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: tenant
app.kubernetes.io/part-of: platform-operator
app.kubernetes.io/managed-by: {{ .Release.Service }}
tenancy.acme.com/tenant: {{ .Release.Name | trunc 63 | trimSuffix "-" }}
tenancy.acme.com/tier: {{ .Values.deploymentTier }}
{{- end }}

{{/*
The Pods a namespace-wide allowance selects: every Pod except those that
carry platform.acme.com/own-ingress-policy (any value). A workload that
ships its own ingress NetworkPolicy carries that label, so only its own
policy decides who reaches it; NetworkPolicies only ever add allowed
traffic, and an allowance that selected it would widen its policy to the
whole namespace. The default deny still selects it.
*/}}
{{- define "namespace-tenant.podsWithoutOwnIngressPolicy" -}}
matchExpressions:
  - key: platform.acme.com/own-ingress-policy
    operator: DoesNotExist
{{- end }}

{{/*
The sizes of each tier, as YAML: quota (ResourceQuota hard limits),
limits and requests (LimitRange container defaults), podSecurity (default
Pod Security level).
*/}}
{{- define "namespace-tenant.tiers" -}}
dev:
  quota: {cpu: "5", memory: 10Gi, pods: "10"}
  limits: {cpu: 500m, memory: 512Mi}
  requests: {cpu: 100m, memory: 128Mi}
  podSecurity: baseline
stg:
  quota: {cpu: "50", memory: 50Gi, pods: "50"}
  limits: {cpu: "1", memory: 1Gi}
  requests: {cpu: 250m, memory: 256Mi}
  podSecurity: restricted
prod:
  quota: {cpu: "500", memory: 200Gi, pods: "100"}
  limits: {cpu: "2", memory: 2Gi}
  requests: {cpu: 500m, memory: 512Mi}
  podSecurity: restricted
{{- end }}

{{/*
The sizes of the selected tier, as YAML (see namespace-tenant.tiers).
*/}}
{{- define "namespace-tenant.tier" -}}
{{- $tiers := include "namespace-tenant.tiers" . | fromYaml }}
{{- $tier := get $tiers .Values.deploymentTier }}
{{- if not $tier }}
{{- fail (printf "deploymentTier %q is not one of dev, stg, prod" .Values.deploymentTier) }}
{{- end }}
{{- toYaml $tier }}
{{- end }}

{{/*
The Pod Security level of the namespace: podSecurity.level, else the tier's.
*/}}
{{- define "namespace-tenant.podSecurityLevel" -}}
{{- $tier := include "namespace-tenant.tier" . | fromYaml }}
{{- default $tier.podSecurity .Values.podSecurity.level }}
{{- end }}

{{/*
Quantities as a YAML map with every value quoted, so that "5" stays a
string and 10Gi is not misread.
*/}}
{{- define "namespace-tenant.quantities" -}}
{{- range $k, $v := . }}
{{ $k }}: {{ toString $v | quote }}
{{- end }}
{{- end }}

{{/*
Refuses to take over a namespace that this release does not own: one
created by another NamespaceTenant, or one that existed before and was
created by something else. Helm would refuse too, but with a message about
its own ownership metadata; this one says what happened in tenant terms.
lookup only sees the cluster on a real install or upgrade (and the
operator's server-side dry-run); offline renders skip the check. Renders
nothing.
*/}}
{{- define "namespace-tenant.checkOwnership" -}}
{{- $ns := lookup "v1" "Namespace" "" .Values.namespaceName }}
{{- if $ns }}
{{- $annotations := $ns.metadata.annotations | default dict }}
{{- $labels := $ns.metadata.labels | default dict }}
{{- $release := get $annotations "meta.helm.sh/release-name" }}
{{- $releaseNamespace := get $annotations "meta.helm.sh/release-namespace" }}
{{- if not (and (eq $release .Release.Name) (eq $releaseNamespace .Release.Namespace)) }}
{{- $other := get $labels "tenancy.acme.com/tenant" }}
{{- if and $other $release }}
{{- fail (printf "namespace %q already belongs to NamespaceTenant %q; a namespace can belong to one tenant only: choose another namespaceName" .Values.namespaceName $other) }}
{{- else }}
{{- fail (printf "namespace %q already exists and was not created by a NamespaceTenant; it is left untouched: choose another namespaceName, or delete the namespace first" .Values.namespaceName) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
