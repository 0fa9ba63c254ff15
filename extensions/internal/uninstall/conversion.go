package uninstall

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// ConversionDecision is what becomes of a CRD's conversion webhook when the
// operator, which serves it, goes.
type ConversionDecision struct {
	// Reset sets the CRD's conversion strategy to None.
	Reset bool
	// Why is the message that says what is done and why; empty when the
	// CRD has no conversion webhook.
	Why string
}

// DecideConversion decides the conversion of a CRD whose conversion
// webhook the operator serves. stored is how many of its objects exist in
// the whole cluster; limited says that the run was limited to some of the
// operator's resources (--selector), so others may remain or be created.
//
// A webhook that nobody serves makes every read in a version other than
// the storage one fail: kubectl asks for the preferred version, so plain
// `kubectl get` and `kubectl delete` fail. Strategy None only rewrites
// apiVersion: an object stored in one version would be shown in another
// with the fields the webhook renames left under their old names, and an
// edit in that version would lose them. So the webhook is replaced only
// when nothing is stored, and kept while anything is (those objects still
// need it, and the caller keeps the operator when anything is left).
func DecideConversion(crd *apiextensionsv1.CustomResourceDefinition, stored int, limited bool) ConversionDecision {
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
		return ConversionDecision{}
	}
	switch {
	case limited:
		return ConversionDecision{Why: fmt.Sprintf("%s: conversion webhook kept: this run was limited by --selector, "+
			"and objects outside it may need converting", crd.Name)}
	case stored > 0:
		return ConversionDecision{Why: fmt.Sprintf("%s: conversion webhook kept: %s of its kind %s stored and need converting",
			crd.Name, plural(stored, "an object", fmt.Sprintf("%d objects", stored)), plural(stored, "is", "are"))}
	}
	return ConversionDecision{Reset: true, Why: fmt.Sprintf("%s: conversion set to None: no object of its kind is stored, "+
		"so none needs converting, and the API server no longer calls the operator's webhook", crd.Name)}
}
