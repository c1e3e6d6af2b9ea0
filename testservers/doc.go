// Package testservers is the one place that talks to a Docker engine: its command testserver
// starts a PostgreSQL or Redis container through testcontainers-go for the tests of a machine that
// has neither server on its default port nor TEST_POSTGRES_URL / TEST_REDIS_URL set.
//
// It is a module of its own, run as a child process by shared/testutil (`go run
// forumstats.local/testservers/cmd/testserver`), so that no service module, and not shared,
// carries the Docker client and the testcontainers dependencies in its module graph.
package testservers
