# forumstats: forum-svc, stats-svc and collector-svc in one Go workspace.
# `make help` lists the targets.

SHELL := /bin/bash
GO ?= go
# Every module that go.work lists.
MODULES := $(shell sed -n 's|^[[:space:]]*\./\([a-z-]*\)$$|\1|p' go.work)
PKGS := $(addprefix ./,$(addsuffix /...,$(MODULES)))
BIN := bin
SERVICES := forum-svc stats-svc collector-svc

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-10s %s\n", $$1, $$2}'

.PHONY: build
build: ## Build the three service binaries into bin/
	@mkdir -p $(BIN)
	@for s in $(SERVICES); do \
		CGO_ENABLED=0 $(GO) build -trimpath -tags timetzdata -o $(BIN)/$$s forumstats.local/$$s/cmd/$$s || exit 1; \
	done
	@echo "built: $(addprefix $(BIN)/,$(SERVICES))"

.PHONY: run
run: build ## Run everything locally on the embedded database (no Docker, no token); Ctrl-C stops it
	@scripts/run.sh

.PHONY: test
test: lint lint-openapi ## Run every test (needs PostgreSQL and Redis: local ports, TEST_POSTGRES_URL/TEST_REDIS_URL, or Docker)
	$(GO) test -race -count=1 -timeout 14m $(PKGS)
	@# The collector in virtual time: one pass at 1,000 servers, a day search only and with the
	@# gateway at 200, a day of live counting with a replica killed (8 servers on SQLite); under
	@# -race they run 200, 10 and 3 servers.
	$(GO) test -count=1 -timeout 14m -run '^TestSimulation(AtScale|Day|DayReplicaKilled)$$' -v ./collector-svc/internal/collect/

.PHONY: bench
bench: ## The five benchmarks (tools/bench: stats, collector, forum, the collector's import/export, forum-svc's webhooks; PostgreSQL on 127.0.0.1:5432, pgbench and redis-server); each prints its figures beside its targets
	@# All five run even when one misses a target; the target fails at the end if any did.
	@status=0; \
	for b in stats collector forum exchange webhook; do $(GO) run ./tools/bench/$$b || { echo "make bench: $$b missed a target or failed" >&2; status=1; }; done; \
	exit $$status

.PHONY: load
load: ## Load: each service at 64 connections for 60 s (LOAD_DURATION, LOAD_CONCURRENCY); zero errors
	$(GO) test -tags load -run '^TestLoad' -v -count=1 -timeout 15m ./tools/systest/

.PHONY: faults
faults: ## Bad input, faults and security against the built services on private PostgreSQL/Redis (~4 min)
	$(GO) test -tags faults -v -count=1 -timeout 15m ./tools/systest/

.PHONY: fuzz
fuzz: ## Run every FuzzXxx in the workspace for a few seconds each (FUZZTIME, default 5s)
	$(GO) run ./tools/cmd/fuzzall -fuzztime $${FUZZTIME:-5s}

.PHONY: lint
# goimports, pinned and run outside the workspace's module graph, keeps each file's imports in one
# block grouped as every editor on gopls writes them (it also merges split import declarations).
GOIMPORTS := golang.org/x/tools/cmd/goimports@v0.52.0

lint: ## gofmt, goimports, go vet and go mod tidy -diff in every module
	@out=$$(gofmt -l $(MODULES) 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@out=$$($(GO) run $(GOIMPORTS) -l $(MODULES)) || exit 1; if [ -n "$$out" ]; then echo "goimports would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	@# Each module's go.mod and go.sum list exactly what its packages and tests import.
	@for m in $(MODULES); do (cd $$m && $(GO) mod tidy -diff) || { echo "go mod tidy would change $$m/go.mod or go.sum (run: cd $$m && go mod tidy)" >&2; exit 1; }; done

# Both services' OpenAPI documents, through the Redocly CLI pinned in tools/openapi-lint.
OPENAPI_DOCS := forum-svc/internal/httpapi/openapi.json stats-svc/internal/httpapi/openapi.json

.PHONY: lint-openapi
lint-openapi: ## Lint both OpenAPI documents with Redocly CLI (recommended rules, two adjusted: tools/openapi-lint/redocly.yaml); any error or warning fails
	@test -d tools/openapi-lint/node_modules/@redocly/cli || { echo "Redocly CLI is missing: (cd tools/openapi-lint && npm ci)" >&2; exit 1; }
	node tools/openapi-lint/lint.mjs $(OPENAPI_DOCS)

.PHONY: migrate
migrate: build ## Apply migrations: FORUM_DATABASE_URL (forum) and STATS_DATABASE_URL (reports); SQLite defaults
	DATABASE_URL=$${FORUM_DATABASE_URL:-sqlite:./data/forum.db} $(BIN)/forum-svc migrate
	DATABASE_URL=$${STATS_DATABASE_URL:-sqlite:./data/stats.db} $(BIN)/stats-svc migrate

.PHONY: up
up: ## docker compose up: the fake Discord without DISCORD_TOKEN; with it, set COLLECTOR_CATALOG to your catalog
	@if [ -z "$$DISCORD_TOKEN" ]; then docker compose --profile fake-discord up -d --build --wait; \
	elif [ -z "$$COLLECTOR_CATALOG" ]; then echo "DISCORD_TOKEN is set: set COLLECTOR_CATALOG=path/to/catalog.json too" >&2; exit 1; \
	else DISCORD_API_BASE=$${DISCORD_API_BASE:-https://discord.com/api/v10} docker compose up -d --build --wait; fi

.PHONY: down
down: ## docker compose down (keeps the database volume; add -v to drop it)
	docker compose --profile fake-discord down --remove-orphans
