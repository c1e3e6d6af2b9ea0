package reportfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/shared/reports"
)

// valid is the example of collector-svc/README.md ("Import and export file"), plus a
// banner-less guild, a stale error-less report and refreshMinutes.
const valid = `{
  "refreshMinutes": 15,
  "catalog": [{"number": 1, "name": "Alpha", "guildId": "81384788765712384"}],
  "guilds": [{"guildId": "81384788765712384", "icon": "a_1f2e", "banner": null,
              "metadataAt": "2026-11-20T10:00:00Z"},
             {"guildId": "42", "icon": null, "metadataAt": null}],
  "daily": [{"guildId": "81384788765712384", "date": "2026-11-19",
             "generatedAt": "2026-11-19T20:59:00Z", "status": "ok", "error": null,
             "totalMessages": 12,
             "channels": [{"id": "81384788765712390", "name": "general", "messages": 12}]},
            {"guildId": "42", "date": "2026-11-19", "generatedAt": "2026-11-19T23:59:00.123456+03:00",
             "status": "stale", "error": null, "totalMessages": 0, "channels": []}],
  "monthly": [{"guildId": "81384788765712384", "month": "2026-11",
               "generatedAt": "2026-11-20T10:00:00Z", "status": "stale",
               "error": {"code": "rate_limited", "message": "..."},
               "totalMessages": 340, "channels": []}]
}`

func TestDecodeValid(t *testing.T) {
	f, err := Decode(strings.NewReader(valid))
	if err != nil {
		t.Fatal(err)
	}
	if f.RefreshMinutes == nil || *f.RefreshMinutes != 15 {
		t.Errorf("refreshMinutes %v", f.RefreshMinutes)
	}
	if len(f.Catalog) != 1 || f.Catalog[0].GuildID != "81384788765712384" || f.Catalog[0].Name != "Alpha" {
		t.Errorf("catalog %+v", f.Catalog)
	}
	g0, g1 := f.Guilds[0], f.Guilds[1]
	if !g0.BannerKnown || g0.Banner != nil || *g0.Icon != "a_1f2e" || !g0.MetadataAt.Equal(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("guild 0 %+v", g0)
	}
	if g1.BannerKnown || g1.Icon != nil || g1.MetadataAt != nil {
		t.Errorf("guild 1 %+v", g1)
	}
	d1 := f.Daily[1]
	if d1.Status != reports.StatusStale || d1.Error != nil || d1.GeneratedAt != time.Date(2026, 11, 19, 20, 59, 0, 123456000, time.UTC) {
		t.Errorf("daily 1 %+v", d1)
	}
	m := f.Monthly[0]
	if m.Period != "2026-11" || m.Error == nil || m.Error.Code != "rate_limited" || m.TotalMessages != 340 {
		t.Errorf("monthly %+v", m)
	}
	if f.Daily[0].Channels[0] != (Channel{ID: "81384788765712390", Name: "general", Messages: 12}) {
		t.Errorf("channels %+v", f.Daily[0].Channels)
	}
}

func TestDecodeOptionalSections(t *testing.T) {
	f, err := Decode(strings.NewReader(`{"daily": []}`))
	if err != nil {
		t.Fatal(err)
	}
	if f.Catalog != nil || f.RefreshMinutes != nil {
		t.Fatalf("absent catalog must stay nil (keep the stored one): %+v", f)
	}
	f, err = Decode(strings.NewReader(`{"catalog": []}`))
	if err != nil || f.Catalog == nil {
		t.Fatalf("an empty catalog must be kept (it clears the stored one): %+v, %v", f, err)
	}
}

func TestDecodeRefusals(t *testing.T) {
	report := func(field string) string {
		// a valid daily report with one field replaced or added
		base := map[string]string{
			"guildId": `"1"`, "date": `"2026-11-19"`, "generatedAt": `"2026-11-19T20:59:00Z"`,
			"status": `"ok"`, "error": `null`, "totalMessages": `3`,
			"channels": `[{"id": "2", "name": "general", "messages": 3}]`,
		}
		if field != "" {
			k, v, _ := strings.Cut(field, "=")
			if v == "-" {
				delete(base, k)
			} else {
				base[k] = v
			}
		}
		var parts []string
		for _, k := range []string{"guildId", "date", "month", "generatedAt", "status", "error", "totalMessages", "channels", "extra"} {
			if v, ok := base[k]; ok {
				parts = append(parts, `"`+k+`": `+v)
			}
		}
		return `{"daily": [` + `{"guildId": "9", "date": "2026-11-18", "generatedAt": "2026-11-18T20:59:00Z", "status": "ok", "error": null, "totalMessages": 0, "channels": []}, {` + strings.Join(parts, ", ") + `}]}`
	}
	tests := []struct {
		name, file, want string
	}{
		{"not JSON", `{"daily": [}`, "invalid JSON at line 1, column 12"},
		{"trailing data", `{} {}`, "file: data after the end of the JSON value"},
		{"empty", ``, "file: empty"},
		{"top-level list", `[]`, "file: must be an object, not a JSON array"},
		{"unknown top-level key", `{"reports": []}`, `file: unknown field "reports"`},
		{"section not a list", `{"catalog": {}}`, "catalog: must be a list, not a JSON object"},
		{"refreshMinutes zero", `{"refreshMinutes": 0}`, "refreshMinutes: must be a positive integer"},
		{"refreshMinutes string", `{"refreshMinutes": "10"}`, "refreshMinutes: must be an integer, not a JSON string"},
		{"catalog unknown key", `{"catalog": [{"number": 1, "name": "A", "guildId": "1", "icon": "x"}]}`, `catalog[0]: unknown field "icon"`},
		{"catalog number negative", `{"catalog": [{"number": -1, "name": "A", "guildId": "1"}]}`, "catalog[0].number: must be a positive integer"},
		{"catalog number float", `{"catalog": [{"number": 1.5, "name": "A", "guildId": "1"}]}`, "catalog[0].number: must be an integer, not a JSON number 1.5"},
		{"catalog duplicate number", `{"catalog": [{"number": 1, "name": "A", "guildId": "1"}, {"number": 1, "name": "B", "guildId": "2"}]}`, "catalog[1].number: 1 is also the number of catalog[0]"},
		{"catalog duplicate guild", `{"catalog": [{"number": 1, "name": "A", "guildId": "1"}, {"number": 2, "name": "B", "guildId": "1"}]}`, "catalog[1].guildId: 1 is also the guild of catalog[0]"},
		{"catalog bad guild", `{"catalog": [{"number": 1, "name": "A", "guildId": "x1"}]}`, `catalog[0].guildId: must be 1 to 20 digits, got "x1"`},
		{"guild id missing", `{"guilds": [{"icon": null}]}`, "guilds[0].guildId: must be 1 to 20 digits"},
		{"guild id number", `{"guilds": [{"guildId": 1}]}`, "guilds[0].guildId: must be a string, not a JSON number"},
		{"guild duplicate", `{"guilds": [{"guildId": "1"}, {"guildId": "1"}]}`, "guilds[1].guildId: 1 is also the guild of guilds[0]"},
		{"guild banner number", `{"guilds": [{"guildId": "1", "banner": 5}]}`, "guilds[0]: banner: must be a string or null"},
		{"guild bad time", `{"guilds": [{"guildId": "1", "metadataAt": "2026-11-20 10:00:00"}]}`, "guilds[0].metadataAt: must be an RFC 3339 time"},
		{"report unknown key", report(`extra="x"`), `daily[1]: unknown field "extra"`},
		{"daily with month", report(`month="2026-11"`), `daily[1]: unknown field "month"`},
		{"report guild missing", report(`guildId=-`), "daily[1].guildId: must be 1 to 20 digits"},
		{"report guild too long", report(`guildId="123456789012345678901"`), "daily[1].guildId: must be 1 to 20 digits"},
		{"date missing", report(`date=-`), "daily[1].date: required"},
		{"date not real", report(`date="2026-02-30"`), `daily[1].date: must be a real day YYYY-MM-DD, got "2026-02-30"`},
		{"date short form", report(`date="2026-1-05"`), "daily[1].date: must be a real day"},
		{"date out of range", report(`date="2014-12-31"`), "daily[1].date: 2014-12-31 is outside 2015-01-01..2099-12-31"},
		{"generatedAt missing", report(`generatedAt=-`), "daily[1].generatedAt: required"},
		{"generatedAt bad", report(`generatedAt="yesterday"`), "daily[1].generatedAt: must be an RFC 3339 time"},
		{"status missing", report(`status=-`), `daily[1].status: must be "ok" or "stale"`},
		{"status missing value", report(`status="missing"`), `daily[1].status: must be "ok" or "stale"`},
		{"ok with error", report(`error={"code": "x", "message": "y"}`), `daily[1].error: must be null when status is "ok"`},
		{"error without code", report(`status="stale"`) + "", ""}, // valid: stale without error
		{"error code empty", strings.Replace(report(`error={"code": "", "message": "y"}`), `"status": "ok"`, `"status": "stale"`, 1), "daily[1].error.code: must be a non-empty string"},
		{"error message missing", strings.Replace(report(`error={"code": "timeout"}`), `"status": "ok"`, `"status": "stale"`, 1), "daily[1].error.message: required"},
		{"error unknown key", strings.Replace(report(`error={"code": "t", "message": "m", "at": 1}`), `"status": "ok"`, `"status": "stale"`, 1), `daily[1].error: unknown field "at"`},
		{"error a string", strings.Replace(report(`error="boom"`), `"status": "ok"`, `"status": "stale"`, 1), `daily[1].error: must be an object, not a JSON string`},
		{"total missing", report(`totalMessages=-`), "daily[1].totalMessages: required"},
		{"total negative", report(`totalMessages=-1`), "daily[1].totalMessages: must be >= 0"},
		{"total float", report(`totalMessages=1.5`), "daily[1].totalMessages: must be an integer, not a JSON number 1.5"},
		{"channel messages negative", report(`channels=[{"id": "2", "name": "a", "messages": 1}, {"id": "3", "name": "b", "messages": -4}]`), "daily[1].channels[1].messages: must be >= 0"},
		{"channel messages missing", report(`channels=[{"id": "2", "name": "a"}]`), "daily[1].channels[0].messages: required"},
		{"channel id letters", report(`channels=[{"id": "general", "name": "a", "messages": 1}]`), "daily[1].channels[0].id: must be 1 to 20 digits"},
		{"channel name missing", report(`channels=[{"id": "2", "messages": 1}]`), "daily[1].channels[0].name: required"},
		{"channel unknown key", report(`channels=[{"id": "2", "name": "a", "messages": 1, "type": 0}]`), `daily[1].channels[0]: unknown field "type"`},
		{"channel duplicate", report(`channels=[{"id": "2", "name": "a", "messages": 1}, {"id": "2", "name": "b", "messages": 1}]`), "daily[1].channels[1].id: channel 2 is also daily[1].channels[0]"},
		{"duplicate day", strings.Replace(report(`date="2026-11-18"`), `"guildId": "1"`, `"guildId": "9"`, 1), "daily[1]: guild 9 date 2026-11-18 is also reported by daily[0]"},
		{"monthly with date", `{"monthly": [{"guildId": "1", "date": "2026-11-01", "month": "2026-11", "generatedAt": "2026-11-19T20:59:00Z", "status": "ok", "error": null, "totalMessages": 0, "channels": []}]}`, `monthly[0]: unknown field "date"`},
		{"month not real", `{"monthly": [{"guildId": "1", "month": "2026-13", "generatedAt": "2026-11-19T20:59:00Z", "status": "ok", "error": null, "totalMessages": 0, "channels": []}]}`, `monthly[0].month: must be a month YYYY-MM, got "2026-13"`},
		{"month out of range", `{"monthly": [{"guildId": "1", "month": "2100-01", "generatedAt": "2026-11-19T20:59:00Z", "status": "ok", "error": null, "totalMessages": 0, "channels": []}]}`, "monthly[0].month: 2100-01 is outside 2015-01..2099-12"},
		{"duplicate month", `{"monthly": [{"guildId": "1", "month": "2026-11", "generatedAt": "2026-11-19T20:59:00Z", "status": "ok", "error": null, "totalMessages": 0, "channels": []}, {"guildId": "1", "month": "2026-11", "generatedAt": "2026-11-19T20:59:00Z", "status": "ok", "error": null, "totalMessages": 0, "channels": []}]}`, "monthly[1]: guild 1 month 2026-11 is also reported by monthly[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Decode(strings.NewReader(tt.file))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("valid file refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted: %+v", f)
			}
			if f != nil {
				t.Fatalf("a refused file must return nothing, got %+v", f)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestEncodeShape(t *testing.T) {
	icon := "a_1"
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.FixedZone("MSK", 3*3600))
	f := &File{
		Guilds: []Guild{
			{GuildID: "1", Icon: &icon, BannerKnown: true, MetadataAt: &at},
			{GuildID: "2"},
		},
		Daily: []Report{{GuildID: "1", Period: "2026-11-19", GeneratedAt: at, Status: reports.StatusOK, TotalMessages: 3,
			Channels: []Channel{{ID: "5", Name: "general", Messages: 3}}}},
		Monthly: []Report{{GuildID: "1", Period: "2026-11", GeneratedAt: at.Add(1500 * time.Microsecond), Status: reports.StatusStale,
			Error: &ReportError{Code: "timeout", Message: "slow"}}},
	}
	var buf bytes.Buffer
	if err := Encode(&buf, f); err != nil {
		t.Fatal(err)
	}
	const want = `{
  "catalog": [],
  "guilds": [
    {
      "guildId": "1",
      "icon": "a_1",
      "banner": null,
      "metadataAt": "2026-11-20T07:00:00Z"
    },
    {
      "guildId": "2",
      "icon": null,
      "metadataAt": null
    }
  ],
  "daily": [
    {
      "guildId": "1",
      "date": "2026-11-19",
      "generatedAt": "2026-11-20T07:00:00Z",
      "status": "ok",
      "error": null,
      "totalMessages": 3,
      "channels": [
        {
          "id": "5",
          "name": "general",
          "messages": 3
        }
      ]
    }
  ],
  "monthly": [
    {
      "guildId": "1",
      "month": "2026-11",
      "generatedAt": "2026-11-20T07:00:00.0015Z",
      "status": "stale",
      "error": {
        "code": "timeout",
        "message": "slow"
      },
      "totalMessages": 0,
      "channels": []
    }
  ]
}
`
	if buf.String() != want {
		t.Fatalf("encoded:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestRoundTrip(t *testing.T) {
	f, err := Decode(strings.NewReader(valid))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Encode(&buf, f); err != nil {
		t.Fatal(err)
	}
	g, err := Decode(&buf)
	if err != nil {
		t.Fatalf("re-decoding the export: %v", err)
	}
	if !reflect.DeepEqual(f, g) {
		t.Fatalf("round trip changed the file:\n%+v\n%+v", f, g)
	}
}

// FuzzDecode: whatever Decode accepts survives Encode and Decode unchanged.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(valid))
	f.Add([]byte(`{"catalog": []}`))
	f.Add([]byte(`{"guilds": [{"guildId": "1", "banner": "x"}]}`))
	f.Add([]byte(`{"daily": [{"guildId": "1", "date": "2026-02-28", "generatedAt": "2026-02-28T00:00:00.5+01:00", "status": "stale", "error": {"code": "c", "message": ""}, "totalMessages": 0}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		var buf, whole bytes.Buffer
		if err := Encode(&buf, file); err != nil {
			t.Fatal(err)
		}
		if err := encodeWhole(&whole, file); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), whole.Bytes()) {
			t.Fatalf("the Encoder wrote other bytes than the whole-file encoding:\n%s\n%s", buf.Bytes(), whole.Bytes())
		}
		again, err := Decode(&buf)
		if err != nil {
			t.Fatalf("export of an accepted file refused: %v\n%s", err, buf.String())
		}
		// An absent catalog is exported as [] (the stored catalog); everything else is equal.
		if file.Catalog == nil {
			again.Catalog = nil
		}
		if !reflect.DeepEqual(normalize(file), normalize(again)) {
			t.Fatalf("round trip changed the file:\n%+v\n%+v", file, again)
		}
	})
}

// normalize makes absent and empty channel lists compare equal.
func normalize(f *File) *File {
	for _, rs := range [][]Report{f.Daily, f.Monthly} {
		for i := range rs {
			if len(rs[i].Channels) == 0 {
				rs[i].Channels = nil
			}
		}
	}
	return f
}

// TestScanSyntaxErrorPosition: reading as a stream, a syntax error is placed at the line and
// column that decoding the whole file gives.
func TestScanSyntaxErrorPosition(t *testing.T) {
	for _, file := range []string{
		`{"daily": [}`,
		`{"daily": [{"guildId": "1",}]}`,
		"{\n  \"guilds\": [\n    {\"guildId\": \"1\"},\n    {\"guildId\": \"2\" \"icon\": null}\n  ]\n}",
		`{"catalog": [{"number": 1, "name": "A", "guildId": "1"} 2]}`,
		`{"refreshMinutes": 1,, "daily": []}`,
		`{"refreshMinutes": 1x}`,
		`{"daily": [] "monthly": []}`,
		`{"daily": []]`,
		"{\"guilds\": [\n {\"guildId\": \"1\"},\n {\"guildId\": tru}\n]}",
		`{"daily": [{"guildId": "1"`,
		`{"daily"`,
		`{"daily": [{"guildId": "1", "date": "2026-11-19", "generatedAt": "2026-11-19T20:59:00Z", "status": "ok", "error": null, "totalMessages": 3, "channels": [{"id": "2", "name": "general", "messages": 3}, {"id": "3", "name": "x", "messages": 1e}]}]}`,
		`{`,
		`x`,
		"\n\n   {\"guilds\": [  {\"guildId\": \"1\"} ,  {]}",
	} {
		var whole *json.SyntaxError
		if err := json.Unmarshal([]byte(file), new(any)); !errors.As(err, &whole) {
			t.Fatalf("%q: json.Unmarshal gives %v, want a syntax error", file, err)
		}
		line, col := position([]byte(file), whole.Offset)
		want := fmt.Sprintf("invalid JSON at line %d, column %d: ", line, col)
		_, err := Scan(strings.NewReader(file), Visitor{})
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: err = %v, want it to start with %q", file, err, want)
		}
	}
}

// TestScanVisitsInFileOrder: Scan hands every entry to its visitor in the file's order, the
// sections in any order, and counts them; the first bad entry in the file's order is the error.
func TestScanVisitsInFileOrder(t *testing.T) {
	file := `{"monthly": [{"guildId": "1", "month": "2026-11", "generatedAt": "2026-11-20T10:00:00Z", "status": "ok", "error": null, "totalMessages": 0, "channels": []}],
	  "guilds": [{"guildId": "2"}, {"guildId": "1"}], "catalog": [], "refreshMinutes": 5}`
	var got []string
	n, err := Scan(strings.NewReader(file), Visitor{
		RefreshMinutes: func(m int) error { got = append(got, fmt.Sprint("refresh ", m)); return nil },
		Catalog:        func(es []catalog.Entry) error { got = append(got, fmt.Sprint("catalog ", len(es))); return nil },
		Guild:          func(g Guild) error { got = append(got, "guild "+g.GuildID); return nil },
		Monthly:        func(r Report) error { got = append(got, "monthly "+r.GuildID+" "+r.Period); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"monthly 1 2026-11", "guild 2", "guild 1", "catalog 0", "refresh 5"}
	if !slices.Equal(got, want) {
		t.Errorf("visited %q, want %q", got, want)
	}
	if n != (Counts{Catalog: true, Guilds: 2, Monthly: 1}) {
		t.Errorf("counts %+v", n)
	}
	for _, tt := range []struct{ file, want string }{
		{`{"guilds": [{"guildId": "x"}], "refreshMinutes": 0}`, "guilds[0].guildId: must be 1 to 20 digits"},
		{`{"refreshMinutes": 0, "guilds": [{"guildId": "x"}]}`, "refreshMinutes: must be a positive integer"},
		{`{"daily": [], "DAILY": []}`, `file: field "DAILY" given twice`},
		{`{"Guilds": [{"guildId": "1"}, {"guildId": "1"}]}`, "guilds[1].guildId: 1 is also the guild of guilds[0]"},
	} {
		if _, err := Scan(strings.NewReader(tt.file), Visitor{}); err == nil || err.Error() != tt.want {
			t.Errorf("%s: err = %v, want %q", tt.file, err, tt.want)
		}
	}
}
