package releaseidentity

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		err  string
	}{
		{"none", Options{}, ""},
		{"the shipped one", Options{ServiceAccount: "platform-operator-release", DeployerRole: DefaultDeployerRole}, ""},
		{"not a name", Options{ServiceAccount: "Release Deployer", DeployerRole: DefaultDeployerRole}, `release service account: "Release Deployer" is not a ServiceAccount name`},
		{"no role", Options{ServiceAccount: "r"}, "release deployer role must not be empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.err)
			}
		})
	}
	if (Options{}).Managed() != nil {
		t.Error("no ServiceAccount, yet a managed identity")
	}
}

func TestAnnotated(t *testing.T) {
	ns := func(v string) *metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
		if v != "" {
			m.Annotations = map[string]string{NamespaceAnnotation: v}
		}
		return m
	}
	if sa, err := Annotated(ns("")); sa != "" || err != nil {
		t.Errorf("no annotation: %q, %v", sa, err)
	}
	if sa, err := Annotated(ns("tenant-deployer")); sa != "tenant-deployer" || err != nil {
		t.Errorf("annotated: %q, %v", sa, err)
	}
	_, err := Annotated(ns("../admin"))
	if err == nil || !strings.Contains(err.Error(), "namespace team-a: annotation platform.acme.com/release-service-account") {
		t.Errorf("a bad name: %v", err)
	}
}
