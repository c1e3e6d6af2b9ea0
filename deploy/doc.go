// Package deploy has no code of its own: its tests check the deployment files — deploy/Dockerfile,
// .dockerignore, docker-compose.yml and the Kustomize tree under deploy/k8s — against each other
// and against the services' sources, offline (no cluster, no Docker engine). The compose
// healthcheck probe lives in cmd/healthcheck.
package deploy
