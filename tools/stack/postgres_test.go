package stack

import (
	"context"
	"testing"
)

func TestPostgresCreateDatabase(t *testing.T) {
	ctx := context.Background()
	pg, err := NewPostgres(ctx, PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	url, err := pg.CreateDatabase(ctx, "made")
	if err != nil || url != pg.URL("made") {
		t.Fatalf("CreateDatabase = %q, %v; want %q", url, err, pg.URL("made"))
	}
	conn, err := pg.Connect(ctx, "made")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE leftover (x int)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	// A second run of a test reuses the name: the leftover database is replaced by an empty one.
	if _, err := pg.CreateDatabase(ctx, "made"); err != nil {
		t.Fatal(err)
	}
	conn, err = pg.Connect(ctx, "made")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tables int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'leftover'").Scan(&tables); err != nil || tables != 0 {
		t.Errorf("leftover tables %d (%v), want the database recreated empty", tables, err)
	}
}
