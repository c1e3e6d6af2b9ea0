package store

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/collector-svc/internal/reportfile"
	"forumstats.local/shared/reports"
)

// importFile is what `collector-svc import` does: a scan validating everything, then a second
// scan writing in one transaction.
func importFile(ctx context.Context, s *Store, data []byte) error {
	if _, err := reportfile.Scan(bytes.NewReader(data), reportfile.Visitor{}); err != nil {
		return err
	}
	_, err := s.ImportStream(ctx, func(v reportfile.Visitor) (reportfile.Counts, error) {
		return reportfile.Scan(bytes.NewReader(data), v)
	})
	return err
}

func exportBytes(t *testing.T, s *Store) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := s.ExportTo(context.Background(), &buf); err != nil {
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

// TestExportBytesAsBefore: the export of the fixture is, byte for byte, what the export wrote
// before it streamed (testdata/reports.export.json, written then by `collector-svc export` after
// importing testdata/reports.json), on both dialects.
func TestExportBytesAsBefore(t *testing.T) {
	want, err := os.ReadFile("testdata/reports.export.json")
	if err != nil {
		t.Fatal(err)
	}
	both(t, func(t *testing.T, gdb *gorm.DB) {
		s := New(gdb, nil, nil)
		if err := importFile(context.Background(), s, fixture(t)); err != nil {
			t.Fatal(err)
		}
		if got := exportBytes(t, s); !bytes.Equal(got, want) {
			t.Fatalf("export:\n%s\nbefore:\n%s", got, want)
		}
	})
}

// TestExportInBatches: guilds whose ids sort differently as numbers and as text, more reports of
// a guild than one batch, channels tied on messages, reports without channels: the streamed export
// equals the whole content read at once and ordered in Go, encoded whole.
func TestExportInBatches(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		ctx := context.Background()
		s := New(gdb, nil, nil)
		f := &reportfile.File{}
		day := reports.Day{Year: 2024, Month: time.January, Day: 1}
		for _, g := range []string{"9", "10", "81384788765712384", "222222222222222222"} {
			f.Guilds = append(f.Guilds, reportfile.Guild{GuildID: g})
			for i := range batchSize + 7 {
				r := reportfile.Report{GuildID: g, Period: day.AddDays(i * 3).String(), GeneratedAt: at, Status: reports.StatusOK, TotalMessages: int64(i)}
				for c := range i % 4 {
					r.Channels = append(r.Channels, reportfile.Channel{ID: fmt.Sprint(100 - c*30), Name: "c", Messages: int64(i % 2)})
				}
				f.Daily = append(f.Daily, r)
			}
			f.Monthly = append(f.Monthly, reportfile.Report{GuildID: g, Period: "2026-11", GeneratedAt: at, Status: reports.StatusStale,
				Error: &reportfile.ReportError{Code: "timeout", Message: "m"}, Channels: []reportfile.Channel{{ID: "7", Name: "x", Messages: 2}, {ID: "70", Name: "y", Messages: 2}}})
		}
		if _, err := s.Import(ctx, f); err != nil {
			t.Fatal(err)
		}
		got := exportBytes(t, s)
		whole, err := exportWhole(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := reportfile.Encode(&want, whole); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("streamed export differs from the whole one (%d vs %d bytes)", len(got), want.Len())
		}
	})
}

// exportWhole is the export as it was before it streamed: everything read at once, ordered in Go.
func exportWhole(ctx context.Context, s *Store) (*reportfile.File, error) {
	f := &reportfile.File{}
	err := s.readTx(ctx, func(tx *gorm.DB) error {
		var minutes int
		if err := tx.Raw("SELECT refresh_minutes FROM collector_state WHERE id = 1").Scan(&minutes).Error; err != nil {
			return err
		}
		f.RefreshMinutes = &minutes
		var cat []reports.CatalogServer
		if err := tx.Order("number").Find(&cat).Error; err != nil {
			return err
		}
		f.Catalog = make([]catalog.Entry, len(cat))
		for i, c := range cat {
			f.Catalog[i] = catalog.Entry{Number: c.Number, Name: c.Name, GuildID: c.GuildID}
		}
		var guilds []reports.Guild
		if err := tx.Find(&guilds).Error; err != nil {
			return err
		}
		slices.SortFunc(guilds, func(a, b reports.Guild) int { return cmp.Compare(a.GuildID, b.GuildID) })
		for _, g := range guilds {
			fg := reportfile.Guild{GuildID: g.GuildID, Icon: g.Icon, Banner: g.Banner, BannerKnown: g.BannerKnown}
			if g.MetadataAt != nil {
				at := g.MetadataAt.UTC()
				fg.MetadataAt = &at
			}
			if !g.BannerKnown {
				fg.Banner = nil
			}
			f.Guilds = append(f.Guilds, fg)
		}
		for _, kind := range []reports.Kind{reports.KindDay, reports.KindMonth} {
			t := kind.Tables()
			var reps []reports.Row
			if err := tx.Raw("SELECT " + kind.ReportColumns() + " FROM " + t.Reports).Scan(&reps).Error; err != nil {
				return err
			}
			var chans []reports.ChannelRow
			if err := tx.Raw("SELECT " + kind.ChannelColumns() + " FROM " + t.Channels).Scan(&chans).Error; err != nil {
				return err
			}
			out := make([]reportfile.Report, len(reps))
			index := make(map[[2]string]int, len(reps))
			for i, r := range reps {
				out[i] = reportfile.Report{GuildID: r.GuildID, Period: r.Period, GeneratedAt: r.GeneratedAt.UTC(), Status: r.Status,
					TotalMessages: r.TotalMessages, Channels: []reportfile.Channel{}}
				if r.ErrorCode != nil {
					out[i].Error = &reportfile.ReportError{Code: *r.ErrorCode}
					if r.ErrorMessage != nil {
						out[i].Error.Message = *r.ErrorMessage
					}
				}
				index[[2]string{r.GuildID, r.Period}] = i
			}
			for _, c := range chans {
				i := index[[2]string{c.GuildID, c.Period}]
				out[i].Channels = append(out[i].Channels, reportfile.Channel{ID: c.ChannelID, Name: c.Name, Messages: c.Messages})
			}
			slices.SortFunc(out, func(a, b reportfile.Report) int {
				return cmp.Or(cmp.Compare(a.GuildID, b.GuildID), cmp.Compare(a.Period, b.Period))
			})
			for _, r := range out {
				slices.SortFunc(r.Channels, func(a, b reportfile.Channel) int {
					return cmp.Or(cmp.Compare(b.Messages, a.Messages), cmp.Compare(a.ID, b.ID))
				})
			}
			if kind == reports.KindDay {
				f.Daily = out
			} else {
				f.Monthly = out
			}
		}
		return nil
	})
	return f, err
}
