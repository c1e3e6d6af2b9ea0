package reportfile

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/shared/reports"
)

// encodeWhole is Encode as it was before the Encoder: the whole file built in memory and written
// by one json.Encoder. The Encoder must write the same bytes.
func encodeWhole(w io.Writer, f *File) error {
	out := struct {
		RefreshMinutes *int            `json:"refreshMinutes,omitempty"`
		Catalog        []catalog.Entry `json:"catalog"`
		Guilds         []wireGuild     `json:"guilds"`
		Daily          []wireReport    `json:"daily"`
		Monthly        []wireReport    `json:"monthly"`
	}{
		RefreshMinutes: f.RefreshMinutes,
		Catalog:        nonNil(f.Catalog),
		Guilds:         make([]wireGuild, 0, len(f.Guilds)),
		Daily:          make([]wireReport, 0, len(f.Daily)),
		Monthly:        make([]wireReport, 0, len(f.Monthly)),
	}
	for _, g := range f.Guilds {
		wg := wireGuild{GuildID: ptr(g.GuildID), Icon: g.Icon}
		if g.BannerKnown {
			wg.Banner = wireBanner{Present: true, Hash: g.Banner}
		}
		if g.MetadataAt != nil {
			wg.MetadataAt = ptr(formatTime(*g.MetadataAt))
		}
		out.Guilds = append(out.Guilds, wg)
	}
	for _, r := range f.Daily {
		out.Daily = append(out.Daily, encodeReport(r, true))
	}
	for _, r := range f.Monthly {
		out.Monthly = append(out.Monthly, encodeReport(r, false))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// TestEncoderBytesAsBefore: for files with every section empty or not, names that JSON escapes
// (HTML characters, U+2028, invalid UTF-8, quotes) and fractional times, the Encoder writes
// exactly the bytes the whole-file encoding wrote.
func TestEncoderBytesAsBefore(t *testing.T) {
	at := time.Date(2026, 11, 20, 10, 0, 0, 123456000, time.FixedZone("MSK", 3*3600))
	icon, banner, minutes := "a_<1>", "b&2", 15
	name := "<script>\"&\u2028\u2029\xff é"
	report := func(g, p string, channels ...Channel) Report {
		return Report{GuildID: g, Period: p, GeneratedAt: at, Status: reports.StatusOK, TotalMessages: 7, Channels: channels}
	}
	ch := Channel{ID: "5", Name: name, Messages: 3}
	full := &File{
		RefreshMinutes: &minutes,
		Catalog:        []catalog.Entry{{Number: 1, Name: name, GuildID: "1"}, {Number: 2, Name: "B", GuildID: "2"}},
		Guilds:         []Guild{{GuildID: "1", Icon: &icon, Banner: &banner, BannerKnown: true, MetadataAt: &at}, {GuildID: "2"}, {GuildID: "3", BannerKnown: true}},
		Daily:          []Report{report("1", "2026-11-19", ch, Channel{ID: "6", Name: "x", Messages: 0}), report("2", "2026-11-19")},
		Monthly: []Report{{GuildID: "1", Period: "2026-11", GeneratedAt: at, Status: reports.StatusStale,
			Error: &ReportError{Code: "timeout", Message: name}, Channels: []Channel{ch}}},
	}
	for _, tt := range []struct {
		name string
		f    *File
	}{
		{"every section", full},
		{"nothing", &File{}},
		{"empty catalog only", &File{Catalog: []catalog.Entry{}}},
		{"guilds only", &File{Guilds: full.Guilds}},
		{"daily only", &File{Daily: full.Daily}},
		{"monthly only", &File{RefreshMinutes: &minutes, Monthly: full.Monthly}},
		{"catalog and monthly", &File{Catalog: full.Catalog, Monthly: full.Monthly}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var want, got bytes.Buffer
			if err := encodeWhole(&want, tt.f); err != nil {
				t.Fatal(err)
			}
			if err := Encode(&got, tt.f); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("Encoder wrote:\n%s\nthe whole-file encoding:\n%s", got.Bytes(), want.Bytes())
			}
		})
	}
}

// TestEncoderSectionOrder: an entry of an earlier section after a later one is an error, not a
// malformed file.
func TestEncoderSectionOrder(t *testing.T) {
	enc, err := NewEncoder(io.Discard, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := enc.Monthly(Report{GuildID: "1", Period: "2026-11"}); err != nil {
		t.Fatal(err)
	}
	if err := enc.Guild(Guild{GuildID: "1"}); err == nil {
		t.Fatal("a guild after a monthly report was accepted")
	}
}
