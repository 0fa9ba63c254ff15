package helmstorage

import (
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"

	prelease "github.com/acme/platform-operator/internal/operator/release"
)

// LimitRecordSize returns d under a check that refuses to create a record
// the API server would refuse for its size (the rule is
// prelease.CheckRecord): Create returns a *prelease.RecordTooLargeError
// and sends nothing. The record is measured as the storage's driver
// encodes it (prelease.EncodeRecord, what Secrets writes), from the
// release Helm is about to store, so the measure is exact.
//
// An install's first write is its record, so an install refused here has
// written nothing; the action path reports the refusal (actionpath's
// record size layer), which also refuses an upgrade before this, at its
// dry-run. Only new records are measured: an update rewrites a record that
// was created at its size (a new status, a description), and refusing it
// would leave a release pending half-way through an action.
func LimitRecordSize(d driver.Driver) driver.Driver {
	return sizeLimit{d}
}

type sizeLimit struct {
	driver.Driver
}

// Create stores rls unless its record is too large.
func (d sizeLimit) Create(key string, rls *release.Release) error {
	if err := prelease.CheckRecord(rls); err != nil {
		return err
	}
	return d.Driver.Create(key, rls)
}
