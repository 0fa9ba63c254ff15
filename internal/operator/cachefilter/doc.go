// Package cachefilter is what the Helm runtime's cache holds and which of
// its events ask for work. The cache keeps custom resources with a trimmed
// status, their whole status compressed beside them (statuses.go), every
// other object as its metadata plus a digest of its content, release
// records without their payload (cachetrim.go); the primary watch passes
// only updates that can ask for work, and the dependent watches drop the
// runtime's own writes (primaryevents.go).
package cachefilter
