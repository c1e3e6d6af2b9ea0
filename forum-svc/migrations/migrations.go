// Package migrations embeds the versioned schema of forum-svc, one directory per dialect.
package migrations

import (
	"embed"

	"forumstats.local/shared/migrate"
)

//go:embed postgres/*.sql sqlite/*.sql
var files embed.FS

// Set is the "forum" component's migrations, applied through shared/migrate.
var Set = migrate.Set{Component: "forum", FS: files}
