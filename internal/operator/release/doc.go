// Package release holds the rules of a Helm release as this operator keeps
// it, free of any client or controller: who owns a release (owner.go), the
// digest that tells an unchanged release from a changed one (digest.go),
// the values a custom resource's release is rendered with (values.go), the
// operator's default images (images.go), the size of a release's record
// (record.go), and where its rendered objects may land (confine.go).
//
// The runtime's action path, its values translator and the admission
// check all ask this package, so that what the webhook refuses at apply
// and what the reconciler refuses later are the same judgement.
package release
