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
test: lint ## Run every test (needs PostgreSQL and Redis: local ports, TEST_POSTGRES_URL/TEST_REDIS_URL, or Docker)
	$(GO) test -race -count=1 -timeout 14m $(PKGS)

.PHONY: lint
lint: ## gofmt and go vet
	@out=$$(gofmt -l $(MODULES) 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

.PHONY: migrate
migrate: build ## Apply migrations to DATABASE_URL (forum database: FORUM_DATABASE_URL, reports: STATS_DATABASE_URL)
	$(BIN)/forum-svc migrate
	DATABASE_URL=$${STATS_DATABASE_URL:-$${DATABASE_URL:-sqlite:./data/stats.db}} $(BIN)/stats-svc migrate

.PHONY: up
up: ## docker compose up (uses the fake Discord when DISCORD_TOKEN is empty)
	@if [ -z "$$DISCORD_TOKEN" ]; then docker compose --profile fake-discord up -d --build; \
	else docker compose up -d --build; fi

.PHONY: down
down: ## docker compose down
	docker compose --profile fake-discord down
