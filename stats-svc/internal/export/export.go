// Package export writes a table as CSV (RFC 4180) that a spreadsheet opens as data, never as a
// formula. It does no I/O: the HTTP layer sends what CSV returns.
package export

import (
	"strconv"
	"strings"
)

// Cell is one field: a number, a text or empty. A number is written as digits (a negative one
// with its minus sign) and stays a number in a spreadsheet; a text is guarded (see Guard).
type Cell struct {
	text  string
	num   int64
	isNum bool
}

// Text is a text cell.
func Text(s string) Cell { return Cell{text: s} }

// Int is a number cell.
func Int(n int64) Cell { return Cell{num: n, isNum: true} }

// IntOrEmpty is a number cell, or an empty one for nil (a count that does not exist, such as a
// day without a report: empty, not 0).
func IntOrEmpty(n *int64) Cell {
	if n == nil {
		return Cell{}
	}
	return Int(*n)
}

// String is the cell's field as written (before CSV quoting).
func (c Cell) String() string {
	if c.isNum {
		return strconv.FormatInt(c.num, 10)
	}
	return Guard(c.text)
}

// Table is a header row and the data rows; every row should have as many cells as the header
// (CSV writes what it is given).
type Table struct {
	Header []string
	Rows   [][]Cell
}

// Guard makes a text harmless to a spreadsheet (OWASP's CSV injection rule): a text starting
// with =, +, -, @, tab or carriage return would be read as a formula (or hide one), so it gets a
// leading apostrophe, which spreadsheets show as text and do not evaluate.
func Guard(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + s
	}
	return s
}

// CSV writes t as RFC 4180 CSV in UTF-8: the header row first (guarded like every text), CRLF
// after every row, a field quoted when it holds a comma, a quote, CR or LF (quotes doubled
// inside), and a row of one empty field written as "" so that a reader does not take it for a
// blank line and skip it.
func CSV(t Table) []byte {
	var b strings.Builder
	size := 64
	for _, h := range t.Header {
		size += len(h) + 1
	}
	b.Grow(size * (len(t.Rows) + 1))
	fields := make([]string, 0, len(t.Header))
	for _, h := range t.Header {
		fields = append(fields, Guard(h))
	}
	writeRow(&b, fields)
	for _, row := range t.Rows {
		fields = fields[:0]
		for _, c := range row {
			fields = append(fields, c.String())
		}
		writeRow(&b, fields)
	}
	return []byte(b.String())
}

func writeRow(b *strings.Builder, fields []string) {
	if len(fields) == 1 && fields[0] == "" {
		b.WriteString("\"\"\r\n")
		return
	}
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		if !strings.ContainsAny(f, ",\"\r\n") {
			b.WriteString(f)
			continue
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(f, `"`, `""`))
		b.WriteByte('"')
	}
	b.WriteString("\r\n")
}

// Filename joins parts with "-" into a file name that needs no quoting or escaping in a
// Content-Disposition header: every byte but ASCII letters, digits, '.', '_' and '-' becomes
// '_', and the name ends in ".csv".
func Filename(parts ...string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('-')
		}
		for j := 0; j < len(p); j++ {
			switch c := p[j]; {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
				b.WriteByte(c)
			default:
				b.WriteByte('_')
			}
		}
	}
	b.WriteString(".csv")
	return b.String()
}
