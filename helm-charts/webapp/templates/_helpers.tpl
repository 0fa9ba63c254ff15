{{/*
Base name of every resource: the release (custom resource) name, cut so
that "<name>-db-0" still fits a 63-character DNS label. Chart.yaml's
generated-values annotation names the database Secret the same way.
*/}}
{{- define "webapp.fullname" -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- end }}

{{/*
Name of the database StatefulSet, its headless Service and its Secret.
*/}}
{{- define "webapp.databaseFullname" -}}
{{- printf "%s-db" (include "webapp.fullname" .) }}
{{- end }}

{{/*
The secretKeyRef (name and key) of the database user's password: the key
"password" of database.auth.existingSecret when set, else of the chart's
own database Secret.
*/}}
{{- define "webapp.databasePasswordRef" -}}
{{- with .Values.database.auth.existingSecret -}}
name: {{ . }}
{{- else -}}
name: {{ include "webapp.databaseFullname" . }}
{{- end }}
key: password
{{- end }}

{{/*
Chart name and version for the helm.sh/chart label.
*/}}
{{- define "webapp.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Image reference of an image values block: "repository@digest" when the
block has a digest, "repository:tag" otherwise.
*/}}
{{- define "webapp.image" -}}
{{- if .digest }}
{{- printf "%s@%s" .repository .digest }}
{{- else }}
{{- printf "%s:%s" .repository .tag }}
{{- end }}
{{- end }}

{{/*
Labels that select the pods of one component. Called with a dict of
"ctx" (the root context) and "component" (app or database). Never change
these on an existing release: selectors are immutable.
*/}}
{{- define "webapp.selectorLabels" -}}
app.kubernetes.io/name: {{ .ctx.Chart.Name }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/*
Labels on every resource of one component (dict of "ctx" and "component").
*/}}
{{- define "webapp.labels" -}}
helm.sh/chart: {{ include "webapp.chart" .ctx }}
{{ include "webapp.selectorLabels" . }}
app.kubernetes.io/part-of: {{ .ctx.Chart.Name }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
{{- end }}

{{/*
The label of a Pod that an ingress NetworkPolicy of this chart selects: a
NamespaceTenant's namespace-wide allowances skip Pods that carry it, so
inside a tenant's namespace that policy alone decides who reaches them
(docs/namespacetenant.md#network-isolation).
*/}}
{{- define "webapp.ownIngressPolicyLabel" -}}
platform.acme.com/own-ingress-policy: "true"
{{- end }}

{{/*
Defaults of each deployment tier, as YAML. Read it with
  $tier := include "webapp.tier" . | fromYaml
*/}}
{{- define "webapp.tier" -}}
{{- $tiers := dict
  "dev" (dict
    "app" (dict "requests" (dict "cpu" "50m" "memory" "64Mi") "limits" (dict "cpu" "500m" "memory" "256Mi"))
    "replicaFloor" 0 "pdb" false "antiAffinity" "none" "storage" "1Gi"
    "db" (dict "requests" (dict "cpu" "100m" "memory" "256Mi") "limits" (dict "cpu" "1" "memory" "512Mi")))
  "stg" (dict
    "app" (dict "requests" (dict "cpu" "100m" "memory" "128Mi") "limits" (dict "cpu" "1" "memory" "512Mi"))
    "replicaFloor" 1 "pdb" false "antiAffinity" "none" "storage" "5Gi"
    "db" (dict "requests" (dict "cpu" "250m" "memory" "512Mi") "limits" (dict "cpu" "1" "memory" "1Gi")))
  "prod" (dict
    "app" (dict "requests" (dict "cpu" "250m" "memory" "256Mi") "limits" (dict "cpu" "2" "memory" "1Gi"))
    "replicaFloor" 2 "pdb" true "antiAffinity" "preferred" "storage" "20Gi"
    "db" (dict "requests" (dict "cpu" "500m" "memory" "1Gi") "limits" (dict "cpu" "2" "memory" "2Gi")))
}}
{{- $tier := required "deploymentTier is required (dev, stg or prod)" .Values.deploymentTier }}
{{- if not (hasKey $tiers $tier) }}
{{- fail (printf "deploymentTier %q is not one of dev, stg, prod" $tier) }}
{{- end }}
{{- toYaml (get $tiers $tier) }}
{{- end }}

{{/*
Resources with the tier's defaults under explicit values. Called with a
dict of "defaults" (tier block) and "values" (a resources values block);
an empty value keeps the default.
*/}}
{{- define "webapp.resources" -}}
{{- $out := dict }}
{{- range $kind := list "requests" "limits" }}
{{- $m := dict }}
{{- range $res := list "cpu" "memory" }}
{{- $_ := set $m $res (default (get (get $.defaults $kind) $res) (get (get $.values $kind) $res) | toString) }}
{{- end }}
{{- $_ := set $out $kind $m }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{/*
Replica count of the app: webAppReplicas raised to the replica floor.
*/}}
{{- define "webapp.replicas" -}}
{{- $tier := include "webapp.tier" . | fromYaml }}
{{- $floor := int .Values.replicaFloor }}
{{- if lt $floor 0 }}{{ $floor = int $tier.replicaFloor }}{{ end }}
{{- max (int .Values.webAppReplicas) $floor }}
{{- end }}

{{/*
"true" when a PodDisruptionBudget is rendered for the app.
*/}}
{{- define "webapp.pdbEnabled" -}}
{{- $mode := .Values.podDisruptionBudget.mode }}
{{- if eq $mode "always" }}true
{{- else if eq $mode "never" }}false
{{- else }}{{ (include "webapp.tier" . | fromYaml).pdb }}
{{- end }}
{{- end }}

{{/*
Anti-affinity mode of the app pods: none, preferred or required.
*/}}
{{- define "webapp.antiAffinity" -}}
{{- if eq .Values.podAntiAffinity "auto" }}
{{- (include "webapp.tier" . | fromYaml).antiAffinity }}
{{- else }}
{{- .Values.podAntiAffinity }}
{{- end }}
{{- end }}

{{/*
Data volume claim of the database: size and storageClassName. A database
that already exists keeps the claim it was created with (a StatefulSet's
volumeClaimTemplates cannot change); otherwise database.storage or the
tier's default. The lookup sees the same StatefulSet in Helm's server-side
dry-run and in the real upgrade, so it never causes a spurious upgrade.
*/}}
{{- define "webapp.databaseClaim" -}}
{{- $size := default (include "webapp.tier" . | fromYaml).storage .Values.database.storage.size }}
{{- $class := .Values.database.storage.storageClassName }}
{{- $live := lookup "apps/v1" "StatefulSet" .Release.Namespace (include "webapp.databaseFullname" .) }}
{{- range (dig "spec" "volumeClaimTemplates" list $live) }}
{{- if eq (dig "metadata" "name" "" .) "data" }}
{{- $size = dig "spec" "resources" "requests" "storage" $size . }}
{{- $class = dig "spec" "storageClassName" "" . }}
{{- end }}
{{- end }}
size: {{ $size | quote }}
storageClassName: {{ $class | quote }}
{{- end }}

{{/*
An HTTP probe of the app container (dict with "probe", a probe values block).
*/}}
{{- define "webapp.httpProbe" -}}
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
Called with a dict of "uid", "gid" and "readOnlyRootFilesystem".
*/}}
{{- define "webapp.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ int64 .uid }}
runAsGroup: {{ int64 .gid }}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: {{ .readOnlyRootFilesystem }}
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/*
Checks across values that the schema cannot express. Renders nothing.
*/}}
{{- define "webapp.validate" -}}
{{- $_ := include "webapp.tier" . }}
{{- if and .Values.cronScaling.enabled (not .Values.cronScaling.jobs) }}
{{- fail "cronScaling.enabled needs at least one entry in cronScaling.jobs" }}
{{- end }}
{{- $names := dict }}
{{- range .Values.cronScaling.jobs }}
{{- if hasKey $names .name }}
{{- fail (printf "cronScaling.jobs: job name %q is used twice" .name) }}
{{- end }}
{{- $_ := set $names .name true }}
{{- end }}
{{- end }}
