// Package deploy has no code of its own: its tests check the deployment files — deploy/Dockerfile,
// .dockerignore, docker-compose.yml, the Kustomize tree under deploy/k8s and the monitoring
// (Grafana dashboards under deploy/grafana, the alert rules and ServiceMonitors of
// deploy/k8s/components/monitoring) — against each other and against the services' sources,
// offline (no cluster, no Docker engine). The metric names of the dashboards and rules are
// checked against the /metrics of the service binaries, built and run on SQLite by the test.
// The compose healthcheck probe lives in cmd/healthcheck.
package deploy
