package helmruntime

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// recordedLine is one line a recordingSink was given.
type recordedLine struct {
	error bool
	msg   string
	kv    []any
}

// recordingSink records what it is given, with the values of WithValues
// first.
type recordingSink struct {
	lines  *[]recordedLine
	values []any
}

func (s recordingSink) Init(logr.RuntimeInfo) {}
func (s recordingSink) Enabled(int) bool      { return true }
func (s recordingSink) Info(_ int, msg string, kv ...any) {
	*s.lines = append(*s.lines, recordedLine{msg: msg, kv: append(append([]any{}, s.values...), kv...)})
}
func (s recordingSink) Error(err error, msg string, kv ...any) {
	*s.lines = append(*s.lines, recordedLine{error: true, msg: msg, kv: append(append(append([]any{}, s.values...), kv...), "error", err.Error())})
}
func (s recordingSink) WithValues(kv ...any) logr.LogSink {
	return recordingSink{lines: s.lines, values: append(append([]any{}, s.values...), kv...)}
}
func (s recordingSink) WithName(string) logr.LogSink { return s }

// TestRefusalsAtInfo: a terminal error (a refusal the action path has
// reported) is logged at info with its message, any other at error, by
// loggers derived from the manager's as controller-runtime derives them.
func TestRefusalsAtInfo(t *testing.T) {
	g := NewWithT(t)
	var lines []recordedLine
	log := refusalsAtInfo(logr.New(recordingSink{lines: &lines})).WithName("widget").WithValues("controller", "widget-controller")

	refusal := fmt.Errorf("wrapped: %w", reconcile.TerminalError(errors.New("the record of release big is too large")))
	log.Error(refusal, "Reconciler error", "name", "big")
	log.Error(errors.New("connection refused"), "Reconciler error", "name", "small")

	g.Expect(lines).To(Equal([]recordedLine{
		{msg: "Reconciler error", kv: []any{"controller", "widget-controller", "name", "big", "error", refusal.Error(), "terminal", true}},
		{error: true, msg: "Reconciler error", kv: []any{"controller", "widget-controller", "name", "small", "error", "connection refused"}},
	}))
}
