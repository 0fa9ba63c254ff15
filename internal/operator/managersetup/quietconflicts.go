package managersetup

import (
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// reconcilerErrorMsg is what controller-runtime logs, at error level with a
// stack trace, when a reconcile returns an error.
const reconcilerErrorMsg = "Reconciler error"

// QuietConflicts returns log whose "Reconciler error" for an
// optimistic-concurrency conflict is an info line at V(1) instead of an
// ERROR with a stack trace. Two writers of one object (the runtime's and
// the sidecar's finalizers, a status write racing a spec edit) meet such a
// conflict in normal operation; the controller queues the request again,
// with backoff, and the next reconcile reads the object afresh. An ERROR
// stays for what a person should look at. The conflicts are still counted
// in controller_runtime_reconcile_errors_total.
func QuietConflicts(log logr.Logger) logr.Logger {
	if log.GetSink() == nil {
		return log
	}
	return logr.New(conflictSink{log.GetSink()})
}

type conflictSink struct{ logr.LogSink }

func (s conflictSink) Error(err error, msg string, kv ...any) {
	if msg == reconcilerErrorMsg && apierrors.IsConflict(err) {
		if s.Enabled(1) {
			s.Info(1, "Reconciling again after a write conflict", append(kv, "conflict", err.Error())...)
		}
		return
	}
	s.LogSink.Error(err, msg, kv...)
}

func (s conflictSink) WithValues(kv ...any) logr.LogSink {
	return conflictSink{s.LogSink.WithValues(kv...)}
}

func (s conflictSink) WithName(name string) logr.LogSink {
	return conflictSink{s.LogSink.WithName(name)}
}

// WithCallDepth keeps the caller that the sink below reports.
func (s conflictSink) WithCallDepth(depth int) logr.LogSink {
	if d, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		return conflictSink{d.WithCallDepth(depth)}
	}
	return s
}
