package managersetup

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestQuietConflicts(t *testing.T) {
	g := NewWithT(t)
	var lines []string
	base := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 1})
	log := QuietConflicts(base).WithName("webapp-controller").WithValues("name", "shop")
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "web.acme.com", Resource: "webapps"}, "shop", errors.New("the object has been modified"))

	log.Error(fmt.Errorf("adding the finalizer: %w", conflict), "Reconciler error")
	g.Expect(lines).To(HaveLen(1))
	g.Expect(lines[0]).To(ContainSubstring(`"level"=1 "msg"="Reconciling again after a write conflict"`))
	g.Expect(lines[0]).To(ContainSubstring(`"name"="shop"`))
	g.Expect(lines[0]).NotTo(ContainSubstring(`"error"`))

	log.Error(errors.New("chart render failed"), "Reconciler error")
	log.Error(conflict, "something else")
	g.Expect(lines).To(HaveLen(3))
	g.Expect(lines[1]).To(ContainSubstring(`"msg"="Reconciler error" "error"="chart render failed"`))
	g.Expect(lines[2]).To(ContainSubstring(`"msg"="something else"`))

	lines = nil
	quiet := QuietConflicts(funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{}))
	quiet.Error(conflict, "Reconciler error")
	g.Expect(lines).To(BeEmpty(), "at the default verbosity a conflict says nothing")
}
