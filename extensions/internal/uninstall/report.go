package uninstall

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource is one custom resource of the operator's kinds: what the
// messages name, read as metadata only (never its spec or status, which
// may hold values a log must not show).
type Resource struct {
	// Kind is the resource's kind; Resource is its API resource in the
	// storage version, the one it is read and deleted in.
	Kind     schema.GroupKind
	Resource schema.GroupVersionResource
	// Namespace is empty for a cluster-scoped kind.
	Namespace, Name string
	Finalizers      []string
	// Deleting is when its deletion was asked for; zero while it is not
	// being deleted.
	Deleting time.Time
}

// String is the kind and the resource's namespace/name (name alone for a
// cluster-scoped kind).
func (r Resource) String() string {
	if r.Namespace == "" {
		return r.Kind.Kind + " " + r.Name
	}
	return r.Kind.Kind + " " + r.Namespace + "/" + r.Name
}

// describe is String with, for a resource being deleted, for how long and
// the finalizers it waits for.
func (r Resource) describe(now time.Time) string {
	if r.Deleting.IsZero() {
		return r.String()
	}
	fin := "none"
	if len(r.Finalizers) > 0 {
		fin = strings.Join(r.Finalizers, ", ")
	}
	return fmt.Sprintf("%s (deleting for %s; finalizers: %s)", r, now.Sub(r.Deleting).Round(time.Second), fin)
}

// finalizerNote says what the finalizers of the operator's kinds do and
// why they need it running.
const finalizerNote = "Their finalizers (Helm uninstall of each release, tenant namespace clean-up, " +
	"CronScaler restore) are run by the operator, so they must be deleted while it runs."

// WriteRefusal says that resources exist, names each of them and how to
// delete them first: deleteCommand (this command with --delete-resources)
// or kubectl. selector is the label selector the search was limited to,
// if any.
func WriteRefusal(w io.Writer, now time.Time, left []Resource, deleteCommand, selector string) {
	fmt.Fprintf(w, "Refusing to continue: %s of the operator's kinds %s.\n", count(len(left)), plural(len(left), "exists", "exist"))
	fmt.Fprintln(w, finalizerNote)
	for _, r := range left {
		fmt.Fprintln(w, "  "+r.describe(now))
	}
	fmt.Fprintln(w, "Delete them first and wait until they are gone:")
	fmt.Fprintln(w, "  "+deleteCommand)
	fmt.Fprintln(w, "or with kubectl, while the operator runs:")
	for _, cmd := range kubectlDeletes(left, selector) {
		fmt.Fprintln(w, "  "+cmd)
	}
}

// WriteTimeout says that resources are still there after the timeout,
// with their finalizers.
func WriteTimeout(w io.Writer, now time.Time, timeout time.Duration, left []Resource) {
	fmt.Fprintf(w, "Timed out after %s: %s of the operator's kinds %s still there:\n", timeout, count(len(left)), plural(len(left), "is", "are"))
	for _, r := range left {
		fmt.Fprintln(w, "  "+r.describe(now))
	}
	fmt.Fprintln(w, "Each waits for the finalizers listed. The operator removes its own: check that it runs, and read its logs "+
		"and the resources' Events (kubectl describe); others are removed by whoever added them. "+
		"Remove the operator only once they are gone.")
}

// kubectlDeletes are the kubectl commands that delete the resources of
// left's kinds, each kind named by resource, version and group so that
// no conversion is needed. selector limits them as the search was.
func kubectlDeletes(left []Resource, selector string) []string {
	var cmds []string
	seen := map[schema.GroupVersionResource]bool{}
	for _, r := range left {
		if seen[r.Resource] {
			continue
		}
		seen[r.Resource] = true
		args := []string{"kubectl", "delete", r.Resource.Resource + "." + r.Resource.Version + "." + r.Resource.Group}
		if selector == "" {
			args = append(args, "--all")
		} else {
			args = append(args, "-l", shellQuote(selector))
		}
		if r.Namespace != "" {
			args = append(args, "--all-namespaces")
		}
		cmds = append(cmds, strings.Join(args, " "))
	}
	return cmds
}

var shellSafe = regexp.MustCompile(`^[-A-Za-z0-9_./=,:]+$`)

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ShellCommand joins args into a command line a POSIX shell reads back as
// args.
func ShellCommand(args ...string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " ")
}

func count(n int) string { return fmt.Sprintf("%d %s", n, plural(n, "resource", "resources")) }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
