// Package reportfile is the import and export file of collector-svc (its shape is in
// collector-svc/README.md): its strict decoding with validation that names the offending entry,
// and its encoding.
//
// Besides the servers' reports, an optional top-level "refreshMinutes" (a positive integer). stats-svc answers with it and ages reports by it, so an export carries it and an
// import applies it when present.
package reportfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
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

// Visitor receives what Scan reads, in the file's order, each part once validated; a nil field
// skips that part. An error a visitor returns ends the scan and is returned as it is.
type Visitor struct {
	RefreshMinutes func(minutes int) error
	Catalog        func(entries []catalog.Entry) error // the whole catalog: it is validated as one
	Guild          func(g Guild) error
	Daily          func(r Report) error
	Monthly        func(r Report) error
}

// Counts is what Scan read.
type Counts struct {
	Catalog                bool // the file has a catalog (it replaces the stored one)
	CatalogEntries         int
	Guilds, Daily, Monthly int
}

// Decode reads a whole import file into memory and validates it. Nothing of a file that fails is
// returned; the error names the first bad entry, like `daily[12].channels[3].messages: must be >= 0`.
// Scan reads a file of any size in bounded memory.
func Decode(r io.Reader) (*File, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	f := &File{}
	_, err = Scan(bytes.NewReader(data), Visitor{
		RefreshMinutes: func(m int) error { f.RefreshMinutes = &m; return nil },
		Catalog:        func(es []catalog.Entry) error { f.Catalog = es; return nil },
		Guild:          func(g Guild) error { f.Guilds = append(f.Guilds, g); return nil },
		Daily:          func(r Report) error { f.Daily = append(f.Daily, r); return nil },
		Monthly:        func(r Report) error { f.Monthly = append(f.Monthly, r); return nil },
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Scan reads an import file from r as a stream, one entry at a time, validates every entry as
// Decode does and hands each to v, so that memory does not grow with the file: what it keeps is
// the catalog and, to refuse duplicates, a small key per guild and per report. The error names the
// first bad entry in the file's order; a syntax error gives its line and column (r is read again
// from its start to count them). An entry handed to v is valid, but a later one may still fail:
// a caller that must write all or nothing validates with a first Scan and writes in a second.
//
// Keys are matched as encoding/json matches struct fields (exact, else case-insensitively); a
// top-level key given twice is refused, as it could not be read once in a stream.
func Scan(r io.ReadSeeker, v Visitor) (Counts, error) {
	sc := &scanner{dec: json.NewDecoder(r), v: v}
	err := sc.file()
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &syntaxErr):
		at, perr := syntaxOffset(r, sc.dec.InputOffset(), syntaxErr)
		if perr != nil {
			return Counts{}, perr
		}
		line, col, perr := positionIn(r, at)
		if perr != nil {
			return Counts{}, perr
		}
		return Counts{}, fmt.Errorf("invalid JSON at line %d, column %d: %v", line, col, syntaxErr)
	case errors.Is(err, io.ErrUnexpectedEOF):
		end, serr := r.Seek(0, io.SeekEnd)
		if serr != nil {
			return Counts{}, serr
		}
		line, col, perr := positionIn(r, end)
		if perr != nil {
			return Counts{}, perr
		}
		return Counts{}, fmt.Errorf("invalid JSON at line %d, column %d: unexpected end of JSON input", line, col)
	case err != nil:
		return Counts{}, err
	}
	return sc.n, nil
}

// scanner is one Scan's state.
type scanner struct {
	dec     *json.Decoder
	v       Visitor
	n       Counts
	started bool // the first token is read: an end of input now is a truncated file
}

// maxRescan bounds what syntaxOffset reads again to place an error inside one value.
const maxRescan = 64 << 20

// syntaxOffset gives the stream offset of err (counted as decoding the whole file counts it: one
// past the offending byte), the decoder's InputOffset being next. A json.Decoder places an error
// of its delimiters at InputOffset, the offending byte itself; an error inside a value it places
// by the bytes it has scanned as values, which leaves out the delimiters read before: the value,
// which starts at InputOffset, is then read again alone to place the error in it.
func syntaxOffset(r io.ReadSeeker, next int64, err *json.SyntaxError) (int64, error) {
	if err.Offset == next {
		return next + 1, nil
	}
	if _, serr := r.Seek(next, io.SeekStart); serr != nil {
		return 0, serr
	}
	var raw json.RawMessage
	var inner *json.SyntaxError
	if derr := json.NewDecoder(io.LimitReader(r, maxRescan)).Decode(&raw); errors.As(derr, &inner) {
		return next + inner.Offset, nil
	}
	return next + 1, nil
}

// sections are the top-level keys, as the file spells them.
var sections = []string{"refreshMinutes", "catalog", "guilds", "daily", "monthly"}

func (sc *scanner) token() (json.Token, error) {
	tok, err := sc.dec.Token()
	if err == io.EOF && sc.started {
		err = io.ErrUnexpectedEOF
	}
	sc.started = true
	return tok, err
}

// value reads the next whole value of the stream.
func (sc *scanner) value() (json.RawMessage, error) {
	var raw json.RawMessage
	err := sc.dec.Decode(&raw)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return raw, err
}

func (sc *scanner) file() error {
	tok, err := sc.token()
	switch {
	case errors.Is(err, io.EOF):
		return errors.New("file: empty")
	case err != nil:
		return err
	case tok == nil:
		// null decodes as an empty file, as it always did.
	case tok != json.Delim('{'):
		return fmt.Errorf("file: must be an object, not a JSON %s", kindOf(tok))
	default:
		if err := sc.object(); err != nil {
			return err
		}
	}
	if _, err := sc.dec.Token(); err != io.EOF {
		return errors.New("file: data after the end of the JSON value")
	}
	return nil
}

// object reads the top-level object's keys and values, its opening brace read.
func (sc *scanner) object() error {
	seen := map[string]bool{}
	reports := map[string]*reportSection{
		"daily":   {section: "daily", periodKey: "date", validPeriod: validDay, visit: sc.v.Daily, count: &sc.n.Daily},
		"monthly": {section: "monthly", periodKey: "month", validPeriod: validMonth, visit: sc.v.Monthly, count: &sc.n.Monthly},
	}
	guilds := map[string]int{}
	for sc.dec.More() {
		tok, err := sc.token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		name := ""
		for _, s := range sections {
			if key == s {
				name = s
				break
			}
			if name == "" && strings.EqualFold(key, s) {
				name = s
			}
		}
		switch {
		case name == "":
			return fmt.Errorf("file: unknown field %q", key)
		case seen[name]:
			return fmt.Errorf("file: field %q given twice", key)
		}
		seen[name] = true
		switch name {
		case "refreshMinutes":
			raw, err := sc.value()
			if err != nil {
				return err
			}
			var minutes *int
			if err := strict(raw, &minutes, "refreshMinutes"); err != nil {
				return err
			}
			if minutes == nil {
				continue // null: absent
			}
			if *minutes <= 0 {
				return errors.New("refreshMinutes: must be a positive integer")
			}
			if sc.v.RefreshMinutes != nil {
				if err := sc.v.RefreshMinutes(*minutes); err != nil {
					return err
				}
			}
		case "catalog":
			var entries []catalog.Entry
			present, err := sc.list("catalog", func(i int, raw json.RawMessage) error {
				var e catalog.Entry
				if err := strict(raw, &e, fmt.Sprintf("catalog[%d]", i)); err != nil {
					return err
				}
				entries = append(entries, e)
				return nil
			})
			if err != nil || !present {
				return err
			}
			if err := catalog.Validate(entries, "catalog"); err != nil {
				return err
			}
			if entries == nil {
				entries = []catalog.Entry{}
			}
			sc.n.Catalog, sc.n.CatalogEntries = true, len(entries)
			if sc.v.Catalog != nil {
				if err := sc.v.Catalog(entries); err != nil {
					return err
				}
			}
		case "guilds":
			_, err := sc.list("guilds", func(i int, raw json.RawMessage) error {
				at := fmt.Sprintf("guilds[%d]", i)
				g, err := decodeGuild(raw, at)
				if err != nil {
					return err
				}
				if j, dup := guilds[g.GuildID]; dup {
					return fmt.Errorf("%s.guildId: %s is also the guild of guilds[%d]", at, g.GuildID, j)
				}
				guilds[g.GuildID] = i
				sc.n.Guilds++
				if sc.v.Guild != nil {
					return sc.v.Guild(g)
				}
				return nil
			})
			if err != nil {
				return err
			}
		default:
			rs := reports[name]
			if _, err := sc.list(name, rs.add); err != nil {
				return err
			}
		}
	}
	_, err := sc.token() // the closing brace
	return err
}

// list reads the value of a section: a list whose elements go to elem one by one, or null
// (present false: as if the key were absent).
func (sc *scanner) list(section string, elem func(i int, raw json.RawMessage) error) (present bool, err error) {
	tok, err := sc.token()
	switch {
	case err != nil:
		return false, err
	case tok == nil:
		return false, nil
	case tok != json.Delim('['):
		return false, fmt.Errorf("%s: must be a list, not a JSON %s", section, kindOf(tok))
	}
	for i := 0; sc.dec.More(); i++ {
		raw, err := sc.value()
		if err != nil {
			return false, err
		}
		if err := elem(i, raw); err != nil {
			return false, err
		}
	}
	_, err = sc.token() // the closing bracket
	return true, err
}

// kindOf names the JSON kind of a token that opens a value, as encoding/json's type errors do.
func kindOf(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		if tok == json.Delim('[') {
			return "array"
		}
		return "object"
	case string:
		return "string"
	case bool:
		return "bool"
	}
	return "number"
}

// positionIn gives the line and column of offset (counted as encoding/json counts a syntax
// error's), reading r from its start.
func positionIn(r io.ReadSeeker, offset int64) (line, col int, err error) {
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return 0, 0, err
	}
	line, col = 1, 1
	buf := make([]byte, 64<<10)
	for pos := int64(0); pos < offset-1; {
		n, err := r.Read(buf[:min(int64(len(buf)), offset-1-pos)])
		for _, c := range buf[:n] {
			if c == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		pos += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, 0, err
		}
	}
	return line, col, nil
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

// reportSection validates the reports of daily or monthly one at a time. To refuse a second
// report of a guild and period it keeps one 8-byte key per report (the guild's and the period's
// numbers among those seen), not the strings: memory stays small beside the file.
type reportSection struct {
	section, periodKey string
	validPeriod        func(string) error
	visit              func(Report) error
	count              *int

	guilds, periods map[string]uint32
	seen            map[uint64]int
}

func (rs *reportSection) add(i int, raw json.RawMessage) error {
	at := fmt.Sprintf("%s[%d]", rs.section, i)
	var w wireReport
	if err := strict(raw, &w, at); err != nil {
		return err
	}
	// Both keys share the wire struct; each section allows only its own.
	period, other, otherKey := w.Date, w.Month, "month"
	if rs.periodKey == "month" {
		period, other, otherKey = w.Month, w.Date, "date"
	}
	if other != nil {
		return fmt.Errorf("%s: unknown field %q", at, otherKey)
	}
	switch {
	case w.GuildID == nil || !catalog.IsGuildID(*w.GuildID):
		return fmt.Errorf("%s.guildId: must be 1 to 20 digits", at)
	case period == nil:
		return fmt.Errorf("%s.%s: required", at, rs.periodKey)
	case w.GeneratedAt == nil:
		return fmt.Errorf("%s.generatedAt: required", at)
	case w.Status == nil || !reports.ValidStoredStatus(*w.Status):
		return fmt.Errorf("%s.status: must be %q or %q", at, reports.StatusOK, reports.StatusStale)
	case w.TotalMessages == nil:
		return fmt.Errorf("%s.totalMessages: required", at)
	case *w.TotalMessages < 0:
		return fmt.Errorf("%s.totalMessages: must be >= 0", at)
	}
	if err := rs.validPeriod(*period); err != nil {
		return fmt.Errorf("%s.%s: %w", at, rs.periodKey, err)
	}
	generated, err := parseTime(*w.GeneratedAt)
	if err != nil {
		return fmt.Errorf("%s.generatedAt: %w", at, err)
	}
	rep := Report{GuildID: *w.GuildID, Period: *period, GeneratedAt: generated, Status: *w.Status, TotalMessages: *w.TotalMessages}
	if rep.Error, err = decodeError(w.Error, at+".error"); err != nil {
		return err
	}
	if rep.Status == reports.StatusOK && rep.Error != nil {
		return fmt.Errorf("%s.error: must be null when status is %q", at, reports.StatusOK)
	}
	key := uint64(number(&rs.guilds, rep.GuildID))<<32 | uint64(number(&rs.periods, rep.Period))
	if j, dup := rs.seen[key]; dup {
		return fmt.Errorf("%s: guild %s %s %s is also reported by %s[%d]", at, rep.GuildID, rs.periodKey, rep.Period, rs.section, j)
	}
	if rs.seen == nil {
		rs.seen = map[uint64]int{}
	}
	rs.seen[key] = i
	rep.Channels = make([]Channel, 0, len(w.Channels))
	seenChannel := map[string]int{}
	for j, rawCh := range w.Channels {
		cat := fmt.Sprintf("%s.channels[%d]", at, j)
		var wc wireChannel
		if err := strict(rawCh, &wc, cat); err != nil {
			return err
		}
		switch {
		case wc.ID == nil || !catalog.IsGuildID(*wc.ID):
			return fmt.Errorf("%s.id: must be 1 to 20 digits", cat)
		case wc.Name == nil:
			return fmt.Errorf("%s.name: required", cat)
		case wc.Messages == nil:
			return fmt.Errorf("%s.messages: required", cat)
		case *wc.Messages < 0:
			return fmt.Errorf("%s.messages: must be >= 0", cat)
		}
		if k, dup := seenChannel[*wc.ID]; dup {
			return fmt.Errorf("%s.id: channel %s is also %s.channels[%d]", cat, *wc.ID, at, k)
		}
		seenChannel[*wc.ID] = j
		rep.Channels = append(rep.Channels, Channel{ID: *wc.ID, Name: *wc.Name, Messages: *wc.Messages})
	}
	*rs.count++
	if rs.visit != nil {
		return rs.visit(rep)
	}
	return nil
}

// number gives s's number in m, a new one for a string not seen before.
func number(m *map[string]uint32, s string) uint32 {
	if *m == nil {
		*m = map[string]uint32{}
	}
	n, ok := (*m)[s]
	if !ok {
		n = uint32(len(*m))
		(*m)[s] = n
	}
	return n
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
	enc, err := NewEncoder(w, f.RefreshMinutes, f.Catalog)
	if err != nil {
		return err
	}
	for _, g := range f.Guilds {
		if err := enc.Guild(g); err != nil {
			return err
		}
	}
	for _, r := range f.Daily {
		if err := enc.Daily(r); err != nil {
			return err
		}
	}
	for _, r := range f.Monthly {
		if err := enc.Monthly(r); err != nil {
			return err
		}
	}
	return enc.Close()
}

// Encoder writes a file entry by entry, the bytes Encode writes for the same entries, so that an
// export need not hold the file: each entry is encoded alone, indented for its depth. The
// sections come in the file's order: the guilds, then the daily reports, then the monthly ones.
type Encoder struct {
	w       *bufio.Writer
	section int // index in encoderSections of the open section
	n       int // entries written in it
	err     error
}

var encoderSections = []string{"catalog", "guilds", "daily", "monthly"}

// NewEncoder starts the file on w: refreshMinutes (when set) and the catalog.
func NewEncoder(w io.Writer, refreshMinutes *int, entries []catalog.Entry) (*Encoder, error) {
	e := &Encoder{w: bufio.NewWriterSize(w, 64<<10)}
	e.w.WriteString("{")
	if refreshMinutes != nil {
		e.w.WriteString("\n  \"refreshMinutes\": " + strconv.Itoa(*refreshMinutes) + ",")
	}
	e.w.WriteString("\n  \"catalog\": ")
	for _, c := range entries {
		e.entry(c)
	}
	e.next(1)
	return e, e.err
}

// Guild writes the next guild.
func (e *Encoder) Guild(g Guild) error {
	e.next(1)
	wg := wireGuild{GuildID: ptr(g.GuildID), Icon: g.Icon}
	if g.BannerKnown {
		wg.Banner = wireBanner{Present: true, Hash: g.Banner}
	}
	if g.MetadataAt != nil {
		wg.MetadataAt = ptr(formatTime(*g.MetadataAt))
	}
	e.entry(wg)
	return e.err
}

// Daily writes the next daily report; the guilds are then over.
func (e *Encoder) Daily(r Report) error {
	e.next(2)
	e.entry(encodeReport(r, true))
	return e.err
}

// Monthly writes the next monthly report; the guilds and daily reports are then over.
func (e *Encoder) Monthly(r Report) error {
	e.next(3)
	e.entry(encodeReport(r, false))
	return e.err
}

// Close ends the sections and the file and flushes what is buffered.
func (e *Encoder) Close() error {
	e.next(len(encoderSections))
	if e.err == nil {
		e.w.WriteString("\n}\n")
		e.err = e.w.Flush()
	}
	return e.err
}

// next moves on to the section of index to (len(encoderSections): past the last), closing the
// open one and writing the empty sections in between.
func (e *Encoder) next(to int) {
	if e.err != nil || to == e.section {
		return
	}
	if to < e.section {
		e.err = fmt.Errorf("reportfile: %s written after %s", encoderSections[to], encoderSections[e.section])
		return
	}
	if e.n == 0 {
		e.w.WriteString("[]")
	} else {
		e.w.WriteString("\n  ]")
	}
	for e.section++; e.section <= to && e.section < len(encoderSections); e.section++ {
		e.w.WriteString(",\n  \"" + encoderSections[e.section] + "\": ")
		if e.section < to {
			e.w.WriteString("[]")
		} else {
			break
		}
	}
	e.n = 0
}

// entry writes one element of the open section, indented as in a whole file.
func (e *Encoder) entry(v any) {
	if e.err != nil {
		return
	}
	b, err := json.MarshalIndent(v, "    ", "  ")
	if err != nil {
		e.err = err
		return
	}
	if e.n == 0 {
		e.w.WriteString("[")
	} else {
		e.w.WriteString(",")
	}
	e.w.WriteString("\n    ")
	_, e.err = e.w.Write(b)
	e.n++
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
