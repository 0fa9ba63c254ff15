// Module webapp-test-app is the test application of the WebApp end-to-end
// tests (hack/images/webapp-test-app/Dockerfile). It has a module of its
// own so its PostgreSQL driver stays out of the operator's go.mod.
module github.com/acme/platform-operator/hack/images/webapp-test-app

go 1.25.0

require github.com/jackc/pgx/v5 v5.12.0

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)
