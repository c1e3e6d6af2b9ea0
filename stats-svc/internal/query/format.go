package query

import (
	"net/url"
	"strconv"
	"strings"
)

// Format is the representation an answer is sent in.
type Format string

const (
	FormatJSON Format = "json"
	FormatCSV  Format = "csv"
)

// ParseFormat chooses the representation of an exportable answer: the format parameter when
// present (json or csv; anything else, or a repeat, is ErrInvalidParameters), else the Accept
// header, where CSV wins only when text/csv is preferred strictly over JSON, so that a browser's
// "*/*" or no header at all keeps JSON.
func ParseFormat(values url.Values, accept []string) (Format, error) {
	if vs, present := values["format"]; present {
		if len(vs) != 1 {
			return "", ErrInvalidParameters
		}
		switch f := Format(vs[0]); f {
		case FormatJSON, FormatCSV:
			return f, nil
		}
		return "", ErrInvalidParameters
	}
	if acceptQ(accept, "text", "csv") > acceptQ(accept, "application", "json") {
		return FormatCSV, nil
	}
	return FormatJSON, nil
}

// acceptQ is the quality an Accept header gives the media type typ/sub: that of the most
// specific range matching it (type/sub over type/* over */*), 0 when none does; no header
// accepts everything equally (1).
func acceptQ(fields []string, typ, sub string) float64 {
	if len(fields) == 0 {
		return 1
	}
	best, q := -1, 0.0
	for _, f := range fields {
		for _, r := range strings.Split(f, ",") {
			params := strings.Split(r, ";")
			mt := strings.ToLower(strings.TrimSpace(params[0]))
			t, s, ok := strings.Cut(mt, "/")
			if !ok {
				continue
			}
			var spec int
			switch {
			case t == typ && s == sub:
				spec = 2
			case t == typ && s == "*":
				spec = 1
			case t == "*" && s == "*":
				spec = 0
			default:
				continue
			}
			if spec <= best {
				continue
			}
			best, q = spec, 1
			for _, p := range params[1:] {
				k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(strings.TrimSpace(k), "q") {
					if x, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && x >= 0 && x <= 1 {
						q = x
					} else {
						q = 0 // a malformed weight accepts nothing rather than everything
					}
				}
			}
		}
	}
	return q
}
