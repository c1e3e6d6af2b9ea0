// Package reportfile is the import and export file of collector-svc (contract section 5): its
// shape, its strict decoding with validation that names the offending entry, and its encoding.
//
// One extension to the contract's example: an optional top-level "refreshMinutes" (a positive
// integer). stats-svc answers with it and ages reports by it, so an export carries it and an
// import applies it when present.
package reportfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/shared/reports"
)

// File is a decoded, valid import file, or the content of an export.
type File struct {
	RefreshMinutes *int            // nil: absent (keep the stored value)
	Catalog        []catalog.Entry // nil: absent (keep the stored catalog); empty: clear it
	Guilds         []Guild
	Daily          []Report // Period "YYYY-MM-DD"
	Monthly        []Report // Period "YYYY-MM"
}

// Guild is a server's metadata. BannerKnown is false when the banner was never collected (the
// key is absent from the file); Banner nil with BannerKnown means no banner.
type Guild struct {
	GuildID     string
	Icon        *string
	Banner      *string
	BannerKnown bool
	MetadataAt  *time.Time
}

// Report is a stored daily or monthly report.
type Report struct {
	GuildID       string
	Period        string
	GeneratedAt   time.Time
	Status        string // reports.StatusOK or reports.StatusStale
	Error         *ReportError
	TotalMessages int64
	Channels      []Channel
}

// ReportError is why a stale report's last refresh failed.
type ReportError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Channel is one channel's count in a report.
type Channel struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Messages int64  `json:"messages"`
}

// The wire shapes. Pointers tell a missing key from a zero value; nested lists stay raw so that
// each element is decoded on its own and an error can name its index.
type wireFile struct {
	RefreshMinutes *int              `json:"refreshMinutes,omitempty"`
	Catalog        []json.RawMessage `json:"catalog"`
	Guilds         []json.RawMessage `json:"guilds"`
	Daily          []json.RawMessage `json:"daily"`
	Monthly        []json.RawMessage `json:"monthly"`
}

type wireGuild struct {
	GuildID    *string    `json:"guildId"`
	Icon       *string    `json:"icon"`
	Banner     wireBanner `json:"banner,omitzero"`
	MetadataAt *string    `json:"metadataAt"`
}

// wireBanner tells an absent "banner" key (zero value, omitted on output) from null.
type wireBanner struct {
	Present bool
	Hash    *string
}

func (b *wireBanner) UnmarshalJSON(data []byte) error {
	b.Present = true
	if string(data) == "null" {
		b.Hash = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return errors.New("banner: must be a string or null")
	}
	b.Hash = &s
	return nil
}

func (b wireBanner) MarshalJSON() ([]byte, error) { return json.Marshal(b.Hash) }

type wireReport struct {
	GuildID       *string           `json:"guildId"`
	Date          *string           `json:"date,omitempty"`
	Month         *string           `json:"month,omitempty"`
	GeneratedAt   *string           `json:"generatedAt"`
	Status        *string           `json:"status"`
	Error         json.RawMessage   `json:"error"`
	TotalMessages *int64            `json:"totalMessages"`
	Channels      []json.RawMessage `json:"channels"`
}

type wireChannel struct {
	ID       *string `json:"id"`
	Name     *string `json:"name"`
	Messages *int64  `json:"messages"`
}

// Decode reads a whole import file and validates it. Nothing of a file that fails is returned;
// the error names the first bad entry, like `daily[12].channels[3].messages: must be >= 0`.
func Decode(r io.Reader) (*File, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var w wireFile
	if err := strict(data, &w, ""); err != nil {
		return nil, err
	}
	f := &File{RefreshMinutes: w.RefreshMinutes}
	if w.RefreshMinutes != nil && *w.RefreshMinutes <= 0 {
		return nil, errors.New("refreshMinutes: must be a positive integer")
	}
	if w.Catalog != nil {
		f.Catalog = make([]catalog.Entry, len(w.Catalog))
		for i, raw := range w.Catalog {
			if err := strict(raw, &f.Catalog[i], fmt.Sprintf("catalog[%d]", i)); err != nil {
				return nil, err
			}
		}
		if err := catalog.Validate(f.Catalog, "catalog"); err != nil {
			return nil, err
		}
	}
	seenGuild := map[string]int{}
	for i, raw := range w.Guilds {
		at := fmt.Sprintf("guilds[%d]", i)
		g, err := decodeGuild(raw, at)
		if err != nil {
			return nil, err
		}
		if j, dup := seenGuild[g.GuildID]; dup {
			return nil, fmt.Errorf("%s.guildId: %s is also the guild of guilds[%d]", at, g.GuildID, j)
		}
		seenGuild[g.GuildID] = i
		f.Guilds = append(f.Guilds, g)
	}
	if f.Daily, err = decodeReports(w.Daily, "daily", "date", validDay); err != nil {
		return nil, err
	}
	if f.Monthly, err = decodeReports(w.Monthly, "monthly", "month", validMonth); err != nil {
		return nil, err
	}
	return f, nil
}

func decodeGuild(raw json.RawMessage, at string) (Guild, error) {
	var w wireGuild
	if err := strict(raw, &w, at); err != nil {
		return Guild{}, err
	}
	if w.GuildID == nil || !catalog.IsGuildID(*w.GuildID) {
		return Guild{}, fmt.Errorf("%s.guildId: must be 1 to 20 digits", at)
	}
	g := Guild{GuildID: *w.GuildID, Icon: w.Icon, Banner: w.Banner.Hash, BannerKnown: w.Banner.Present}
	if w.MetadataAt != nil {
		t, err := parseTime(*w.MetadataAt)
		if err != nil {
			return Guild{}, fmt.Errorf("%s.metadataAt: %w", at, err)
		}
		g.MetadataAt = &t
	}
	return g, nil
}

func decodeReports(raws []json.RawMessage, section, periodKey string, validPeriod func(string) error) ([]Report, error) {
	var out []Report
	seen := map[[2]string]int{}
	for i, raw := range raws {
		at := fmt.Sprintf("%s[%d]", section, i)
		var w wireReport
		if err := strict(raw, &w, at); err != nil {
			return nil, err
		}
		// Both keys share the wire struct; each section allows only its own.
		period, other, otherKey := w.Date, w.Month, "month"
		if periodKey == "month" {
			period, other, otherKey = w.Month, w.Date, "date"
		}
		if other != nil {
			return nil, fmt.Errorf("%s: unknown field %q", at, otherKey)
		}
		var rep Report
		switch {
		case w.GuildID == nil || !catalog.IsGuildID(*w.GuildID):
			return nil, fmt.Errorf("%s.guildId: must be 1 to 20 digits", at)
		case period == nil:
			return nil, fmt.Errorf("%s.%s: required", at, periodKey)
		case w.GeneratedAt == nil:
			return nil, fmt.Errorf("%s.generatedAt: required", at)
		case w.Status == nil || !reports.ValidStoredStatus(*w.Status):
			return nil, fmt.Errorf("%s.status: must be %q or %q", at, reports.StatusOK, reports.StatusStale)
		case w.TotalMessages == nil:
			return nil, fmt.Errorf("%s.totalMessages: required", at)
		case *w.TotalMessages < 0:
			return nil, fmt.Errorf("%s.totalMessages: must be >= 0", at)
		}
		if err := validPeriod(*period); err != nil {
			return nil, fmt.Errorf("%s.%s: %w", at, periodKey, err)
		}
		generated, err := parseTime(*w.GeneratedAt)
		if err != nil {
			return nil, fmt.Errorf("%s.generatedAt: %w", at, err)
		}
		rep = Report{GuildID: *w.GuildID, Period: *period, GeneratedAt: generated, Status: *w.Status, TotalMessages: *w.TotalMessages}
		if rep.Error, err = decodeError(w.Error, at+".error"); err != nil {
			return nil, err
		}
		if rep.Status == reports.StatusOK && rep.Error != nil {
			return nil, fmt.Errorf("%s.error: must be null when status is %q", at, reports.StatusOK)
		}
		key := [2]string{rep.GuildID, rep.Period}
		if j, dup := seen[key]; dup {
			return nil, fmt.Errorf("%s: guild %s %s %s is also reported by %s[%d]", at, rep.GuildID, periodKey, rep.Period, section, j)
		}
		seen[key] = i
		rep.Channels = make([]Channel, 0, len(w.Channels))
		seenChannel := map[string]int{}
		for j, rawCh := range w.Channels {
			cat := fmt.Sprintf("%s.channels[%d]", at, j)
			var wc wireChannel
			if err := strict(rawCh, &wc, cat); err != nil {
				return nil, err
			}
			switch {
			case wc.ID == nil || !catalog.IsGuildID(*wc.ID):
				return nil, fmt.Errorf("%s.id: must be 1 to 20 digits", cat)
			case wc.Name == nil:
				return nil, fmt.Errorf("%s.name: required", cat)
			case wc.Messages == nil:
				return nil, fmt.Errorf("%s.messages: required", cat)
			case *wc.Messages < 0:
				return nil, fmt.Errorf("%s.messages: must be >= 0", cat)
			}
			if k, dup := seenChannel[*wc.ID]; dup {
				return nil, fmt.Errorf("%s.id: channel %s is also %s.channels[%d]", cat, *wc.ID, at, k)
			}
			seenChannel[*wc.ID] = j
			rep.Channels = append(rep.Channels, Channel{ID: *wc.ID, Name: *wc.Name, Messages: *wc.Messages})
		}
		out = append(out, rep)
	}
	return out, nil
}

func decodeError(raw json.RawMessage, at string) (*ReportError, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var w struct {
		Code    *string `json:"code"`
		Message *string `json:"message"`
	}
	if err := strict(raw, &w, at); err != nil {
		return nil, err
	}
	switch {
	case w.Code == nil || strings.TrimSpace(*w.Code) == "":
		return nil, fmt.Errorf("%s.code: must be a non-empty string", at)
	case w.Message == nil:
		return nil, fmt.Errorf("%s.message: required", at)
	}
	return &ReportError{Code: *w.Code, Message: *w.Message}, nil
}

// strict decodes one JSON value into v, refusing unknown keys and trailing data, and turns
// decoding errors into messages that start with the entry's path.
func strict(data []byte, v any, at string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("data after the end of the JSON value")
		}
	}
	if err == nil {
		return nil
	}
	prefix := at
	if prefix == "" {
		prefix = "file"
	}
	var (
		typeErr   *json.UnmarshalTypeError
		syntaxErr *json.SyntaxError
	)
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field != "" {
			prefix = strings.TrimPrefix(prefix+"."+field, "file.")
		}
		return fmt.Errorf("%s: must be %s, not a JSON %s", prefix, describe(typeErr.Type), typeErr.Value)
	case errors.As(err, &syntaxErr):
		line, col := position(data, syntaxErr.Offset)
		return fmt.Errorf("invalid JSON at line %d, column %d: %v", line, col, syntaxErr)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%s: empty", prefix)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: invalid JSON: unexpected end", prefix)
	}
	// Unknown fields and custom decoders: encoding/json says "json: unknown field \"x\"".
	return fmt.Errorf("%s: %s", prefix, strings.TrimPrefix(err.Error(), "json: "))
}

func describe(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

func position(data []byte, offset int64) (line, col int) {
	line, col = 1, 1
	for i := int64(0); i < offset-1 && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("must be an RFC 3339 time like 2026-11-20T10:00:00Z, got %q", s)
	}
	return t.UTC(), nil
}

func validDay(s string) error {
	d, ok := reports.ParseDay(s)
	return validPeriod(s, ok, d.InLimits(), "a real day YYYY-MM-DD", reports.MinDay.String(), reports.MaxDay.String())
}

func validMonth(s string) error {
	m, ok := reports.ParseMonth(s)
	return validPeriod(s, ok, m.InLimits(), "a month YYYY-MM", reports.MinMonth.String(), reports.MaxMonth.String())
}

// validPeriod says why the period s is refused: not parsed as what, or outside lo..hi.
func validPeriod(s string, parsed, inLimits bool, what, lo, hi string) error {
	switch {
	case !parsed:
		return fmt.Errorf("must be %s, got %q", what, s)
	case !inLimits:
		return fmt.Errorf("%s is outside %s..%s", s, lo, hi)
	}
	return nil
}

// Encode writes f in the file's shape: catalog, guilds, daily, monthly (and refreshMinutes when
// set), times in RFC 3339 UTC with a Z, in the order f holds them. Empty sections are written
// as [] so that an exported empty catalog still replaces the catalog on import.
func Encode(w io.Writer, f *File) error {
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

// encodeReport gives the wire form; channels are raw so that the same struct serves both ways.
func encodeReport(r Report, daily bool) wireReport {
	wr := wireReport{
		GuildID:       ptr(r.GuildID),
		GeneratedAt:   ptr(formatTime(r.GeneratedAt)),
		Status:        ptr(r.Status),
		TotalMessages: ptr(r.TotalMessages),
		Error:         json.RawMessage("null"),
		Channels:      make([]json.RawMessage, 0, len(r.Channels)),
	}
	if daily {
		wr.Date = ptr(r.Period)
	} else {
		wr.Month = ptr(r.Period)
	}
	if r.Error != nil {
		wr.Error = mustJSON(r.Error)
	}
	for _, c := range r.Channels {
		wr.Channels = append(wr.Channels, mustJSON(c))
	}
	return wr
}

// formatTime keeps every stored digit (RFC 3339 with fractional seconds when there are any), so
// that a round trip reproduces the stored instant exactly.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs of strings and integers are marshalled here
	}
	return b
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func ptr[T any](v T) *T { return &v }
