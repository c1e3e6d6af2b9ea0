package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/collector-svc/internal/reportfile"
	"forumstats.local/shared/reports"
)

// importFile is what `collector-svc import` does: decode (validating everything), then write.
func importFile(ctx context.Context, s *Store, data []byte) error {
	f, err := reportfile.Decode(bytes.NewReader(data))
	if err != nil {
		return err
	}
	_, err = s.Import(ctx, f)
	return err
}

func exportBytes(t *testing.T, s *Store) []byte {
	t.Helper()
	f, err := s.Export(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := reportfile.Encode(&buf, f); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func fixture(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/reports.json")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestImportExportRoundTrip: import → export → import into a fresh database → export gives the
// same bytes, on both dialects and across them; importing again changes nothing.
func TestImportExportRoundTrip(t *testing.T) {
	ctx := context.Background()
	dbs := map[string][2]*gorm.DB{
		"postgres":           {newPG(t), newPG(t)},
		"sqlite":             {newSQLite(t), newSQLite(t)},
		"postgres to sqlite": {newPG(t), newSQLite(t)},
	}
	var exports [][]byte
	for name, pair := range dbs {
		t.Run(name, func(t *testing.T) {
			a, b := New(pair[0], nil, nil), New(pair[1], nil, nil)
			if err := importFile(ctx, a, fixture(t)); err != nil {
				t.Fatal(err)
			}
			first := exportBytes(t, a)
			if err := importFile(ctx, b, first); err != nil {
				t.Fatalf("importing the export: %v", err)
			}
			second := exportBytes(t, b)
			if !bytes.Equal(first, second) {
				t.Fatalf("export of the re-import differs:\n%s\n---\n%s", first, second)
			}
			// Idempotent: the same file again leaves the same content.
			if err := importFile(ctx, b, first); err != nil {
				t.Fatal(err)
			}
			if third := exportBytes(t, b); !bytes.Equal(first, third) {
				t.Fatalf("re-import changed the content:\n%s", third)
			}
			exports = append(exports, first)
		})
	}
	for _, e := range exports[1:] {
		if !bytes.Equal(e, exports[0]) {
			t.Fatalf("dialects export differently:\n%s\n---\n%s", exports[0], e)
		}
	}
	// Spot checks of the content against the fixture.
	f, err := reportfile.Decode(bytes.NewReader(exports[0]))
	if err != nil {
		t.Fatal(err)
	}
	if *f.RefreshMinutes != 7 || len(f.Catalog) != 3 || f.Catalog[2].Number != 30 {
		t.Fatalf("state or catalog lost: %+v", f)
	}
	g := f.Guilds[0] // ordered by id: "222222222222222222", "81384788765712384", "999"
	if g.GuildID != "222222222222222222" || g.BannerKnown || g.MetadataAt.Nanosecond() != 500_000_000 {
		t.Fatalf("guild without banner key: %+v", g)
	}
	if g := f.Guilds[1]; !g.BannerKnown || g.Banner != nil || *g.Icon != "a_1f2e" {
		t.Fatalf("guild with null banner: %+v", g)
	}
	d := f.Daily[1] // 81384788765712384 2026-11-18
	if d.Period != "2026-11-18" || d.Error.Code != "discord_unavailable" || d.GeneratedAt.Format("15:04:05.00") != "21:00:00.25" {
		t.Fatalf("stale daily: %+v", d)
	}
	if ch := f.Daily[2].Channels; f.Daily[2].Period != "2026-11-19" || ch[0].Messages != 9 || ch[1].Messages != 3 {
		t.Fatalf("channels out of order: %+v", f.Daily[2])
	}
	if !strings.Contains(string(exports[0]), `"banner": null`) {
		t.Fatal("a null banner must be exported as null")
	}
}

// TestImportRefusedWritesNothing: a file with any kind of bad entry is refused whole, naming
// the entry, and the database is exactly as before.
func TestImportRefusedWritesNothing(t *testing.T) {
	ctx := context.Background()
	gdb := newPG(t)
	s := New(gdb, nil, nil)
	if err := importFile(ctx, s, fixture(t)); err != nil {
		t.Fatal(err)
	}
	before, gen := exportBytes(t, s), generation(t, gdb)
	// Each bad file is the fixture with one entry broken, at its end, after entries that are
	// valid and would be written by a careless importer.
	good := string(fixture(t))
	tests := []struct{ name, from, to, want string }{
		{"catalog", `{"number": 30, "name": "Gamma without reports", "guildId": "33"}`, `{"number": 30, "name": "Gamma", "guildId": "3a"}`, "catalog[2].guildId: must be 1 to 20 digits"},
		{"guild", `"guildId": "999", "icon": null`, `"guildId": "999", "icon": 5`, "guilds[2].icon: must be a string"},
		{"daily", `"date": "2025-01-01"`, `"date": "2025-02-29"`, "daily[3].date: must be a real day"},
		{"channel", `{"id": "1", "name": "x", "messages": 1}`, `{"id": "1", "name": "x", "messages": -1}`, "daily[3].channels[0].messages: must be >= 0"},
		{"monthly", `"month": "2026-10"`, `"month": "2026-10-01"`, "monthly[1].month: must be a month YYYY-MM"},
		{"status", `"status": "ok", "error": null, "totalMessages": 0, "channels": []}
  ]`, `"status": "fine", "error": null, "totalMessages": 0, "channels": []}
  ]`, `monthly[1].status: must be "ok" or "stale"`},
		{"unknown key", `"refreshMinutes": 7,`, `"refreshMinutes": 7, "servers": [],`, `file: unknown field "servers"`},
		{"syntax", `"refreshMinutes": 7,`, `"refreshMinutes": 7,,`, "invalid JSON at line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := strings.Replace(good, tt.from, tt.to, 1)
			if bad == good {
				t.Fatalf("fixture does not contain %q", tt.from)
			}
			// Make the valid part differ from what is stored, so that a partial write would show.
			bad = strings.Replace(bad, `"refreshMinutes": 7`, `"refreshMinutes": 8`, 1)
			bad = strings.Replace(bad, `"totalMessages": 12`, `"totalMessages": 13`, 1)
			err := importFile(ctx, s, []byte(bad))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if after := exportBytes(t, s); !bytes.Equal(before, after) || generation(t, gdb) != gen {
				t.Fatalf("a refused import changed the database")
			}
		})
	}
}

// TestImportIsOneTransaction: a failure of the database midway rolls everything back.
func TestImportIsOneTransaction(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		ctx := context.Background()
		s := New(gdb, nil, nil)
		before, gen := exportBytes(t, s), generation(t, gdb)
		boom := errors.New("injected failure")
		// Fail the insert of monthly channel counts: the catalog, guilds and daily reports are
		// written by then.
		err := gdb.Callback().Create().Before("gorm:create").Register("test:fail", func(tx *gorm.DB) {
			if tx.Statement.Table == "monthly_channel_counts" {
				_ = tx.AddError(boom)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		err = importFile(ctx, s, fixture(t))
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
		if err := gdb.Callback().Create().Remove("test:fail"); err != nil {
			t.Fatal(err)
		}
		if after := exportBytes(t, s); !bytes.Equal(before, after) || generation(t, gdb) != gen {
			t.Fatalf("a failed import left data:\n%s", after)
		}
		var n int64
		gdb.Model(&reports.CatalogServer{}).Count(&n)
		if n != 0 {
			t.Fatalf("%d catalog rows after a failed import", n)
		}
	})
}

// TestImportKeepsCatalogWhenAbsent: a file without "catalog" leaves the stored one.
func TestImportKeepsCatalogWhenAbsent(t *testing.T) {
	ctx := context.Background()
	s := New(newSQLite(t), nil, nil)
	if err := importFile(ctx, s, fixture(t)); err != nil {
		t.Fatal(err)
	}
	if err := importFile(ctx, s, []byte(`{"daily": []}`)); err != nil {
		t.Fatal(err)
	}
	cat, _ := s.Catalog(ctx)
	if len(cat) != 3 {
		t.Fatalf("catalog %v", cat)
	}
	if err := importFile(ctx, s, []byte(`{"catalog": []}`)); err != nil {
		t.Fatal(err)
	}
	if cat, _ := s.Catalog(ctx); len(cat) != 0 {
		t.Fatalf("an empty catalog did not replace the stored one: %v", cat)
	}
}

// TestImportInBatches: more reports and channel rows than one INSERT takes are all written, and
// importing them again replaces each report's channels rather than adding to them.
func TestImportInBatches(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		ctx := context.Background()
		s := New(gdb, nil, nil)
		day := reports.Day{Year: 2024, Month: time.January, Day: 1}
		f := &reportfile.File{}
		for i := range batchSize + 100 {
			f.Daily = append(f.Daily, reportfile.Report{GuildID: "1", Period: day.AddDays(i).String(), GeneratedAt: at,
				Status: reports.StatusOK, TotalMessages: 3, Channels: []reportfile.Channel{{ID: "10", Name: "a", Messages: 1}, {ID: "11", Name: "b", Messages: 2}}})
		}
		for range 2 {
			if _, err := s.Import(ctx, f); err != nil {
				t.Fatal(err)
			}
		}
		var reps, chans int64
		gdb.Model(&reports.DailyReport{}).Count(&reps)
		gdb.Model(&reports.DailyChannelCount{}).Count(&chans)
		if reps != int64(len(f.Daily)) || chans != 2*reps {
			t.Fatalf("%d reports and %d channel rows, want %d and %d", reps, chans, len(f.Daily), 2*len(f.Daily))
		}
	})
}
