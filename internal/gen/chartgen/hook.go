package chartgen

import (
	"fmt"
	"sort"
	"strings"
)

// uninstallHook is the pre-delete hook of helm uninstall: a Job running
// the operator image's `extensions uninstall` (the check make undeploy
// runs), with the rights it needs on the CRDs and on every resource of
// the operator's kinds, which crds lists. It refuses while any resource
// exists, naming them, or with uninstall.deleteResources deletes them and
// waits for their finalizers while the operator still runs; then it
// removes the ServiceAccounts and RoleBindings the operator made for its
// releases.
func uninstallHook(crds []map[string]any) (string, error) {
	byGroup := map[string][]string{}
	for _, crd := range crds {
		spec, _ := crd["spec"].(map[string]any)
		names, _ := spec["names"].(map[string]any)
		group, _ := spec["group"].(string)
		plural, _ := names["plural"].(string)
		if group == "" || plural == "" {
			return "", fmt.Errorf("CRD %v has no group or plural", crd["metadata"])
		}
		byGroup[group] = append(byGroup[group], plural)
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var rules strings.Builder
	for _, g := range groups {
		sort.Strings(byGroup[g])
		fmt.Fprintf(&rules, "- apiGroups: [%s]\n  resources: [%s]\n  verbs: [get, list, watch, delete]\n", g, strings.Join(byGroup[g], ", "))
	}
	return strings.NewReplacer("@rules@", rules.String(), "@image@", scalars["image"]).Replace(hookTemplate), nil
}

const hookTemplate = `{{- define "platform-operator.uninstallHook" }}
{{- $ := index . 0 }}
  labels:
    app.kubernetes.io/name: platform-operator
    app.kubernetes.io/managed-by: {{ $.Release.Service }}
    app.kubernetes.io/instance: {{ $.Release.Name }}
  annotations:
    helm.sh/hook: pre-delete
    helm.sh/hook-weight: {{ index . 1 | quote }}
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end }}
{{- if .Values.uninstall.check }}
# helm uninstall runs this Job first (docs/operations.md#uninstall): while
# the operator still runs, it refuses when resources of the operator's kinds
# exist, naming them in its log, or with uninstall.deleteResources deletes
# them and waits for their finalizers (Helm uninstall of each release,
# tenant clean-up). A CRD no resource is left of gets conversion None, so
# what helm uninstall keeps reads without the removed webhook.
apiVersion: v1
kind: ServiceAccount
metadata:
  name: platform-operator-uninstall
  namespace: {{ .Release.Namespace }}
  {{- include "platform-operator.uninstallHook" (list . "-10") }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: platform-operator-uninstall
  {{- include "platform-operator.uninstallHook" (list . "-10") }}
rules:
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  verbs: [get, list, patch]
# What the operator made in each release's namespace to apply releases as.
- apiGroups: [""]
  resources: [serviceaccounts]
  verbs: [list, delete]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [rolebindings]
  verbs: [list, delete]
@rules@---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: platform-operator-uninstall
  {{- include "platform-operator.uninstallHook" (list . "-10") }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: platform-operator-uninstall
subjects:
- kind: ServiceAccount
  name: platform-operator-uninstall
  namespace: {{ .Release.Namespace }}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: platform-operator-uninstall
  namespace: {{ .Release.Namespace }}
  # A failed Job stays, with its log, until the next helm uninstall.
  {{- include "platform-operator.uninstallHook" (list . "0") }}
spec:
  backoffLimit: 0
  template:
    metadata:
      labels:
        app.kubernetes.io/name: platform-operator-uninstall
    spec:
      restartPolicy: Never
      serviceAccountName: platform-operator-uninstall
      securityContext:
        runAsNonRoot: true
        seccompProfile:
          type: RuntimeDefault
      containers:
      - name: uninstall
        image: @image@
{{- with .Values.image.pullPolicy }}
        imagePullPolicy: {{ . }}
{{- end }}
        command:
        - /extensions
        - uninstall
        - --timeout={{ .Values.uninstall.timeout }}
{{- if .Values.uninstall.deleteResources }}
        - --delete-resources
{{- end }}
        resources:
          requests:
            cpu: 10m
            memory: 64Mi
          limits:
            memory: 256Mi
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities:
            drop: ["ALL"]
{{- end }}
`
